/**
 * examples/durable-payment.ts, compiled and run as a user runs it (its own process, Streamable
 * HTTP, an SDK client), against a loopback payments API with faults: whatever the fault, the
 * service holds exactly one payment per idempotency key and `get_operation` ends `succeeded` with
 * that payment's id. On SQLite and PostgreSQL; on PostgreSQL also two processes (two workers) on one
 * database; on both, a `kill -9` of the process mid-dispatch and a second one taking over.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import pg from 'pg';
import { afterEach, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { buildExamples, examplePath, startExample } from '../helpers/example-fixtures.js';
import {
  callTool,
  cleanEnv,
  cleanup,
  closeQuietly,
  connectHttp,
  makeTempDir,
  parseJsonLine,
  REPO_ROOT,
  track,
  waitForLogLines,
  type LogLine,
  type ToolResult,
} from '../helpers/mcp-fixtures.js';
import {
  startPaymentsService,
  type PaymentFault,
  type PaymentsService,
} from '../helpers/payments-service.js';
import { POSTGRES_URL, postgresAvailable } from '../helpers/postgres-fixtures.js';
import { spawn } from 'node:child_process';

/** The example's default policy: an attempt times out after 8 s; the operation's budget is 30 s. */
const SETTLE_MS = 45_000;
const START_MS = 30_000;

interface Backend {
  readonly name: string;
  /** A new, empty database for one test: a SQLite file, or a PostgreSQL URL on its own schema. */
  database(): Promise<string>;
}

const dropSchemas: string[] = [];
const BACKENDS: Backend[] = [
  { name: 'sqlite', database: async () => join(makeTempDir('idem-pay-'), 'payments.sqlite') },
  ...(postgresAvailable
    ? [
        {
          name: 'postgres',
          database: async () => {
            const schema = `idem_pay_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
            await admin((client) => client.query(`CREATE SCHEMA ${schema}`));
            dropSchemas.push(schema);
            const url = new URL(POSTGRES_URL);
            url.searchParams.set('options', `-c search_path=${schema}`);
            return url.toString();
          },
        },
      ]
    : []),
];

async function admin<T>(use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

const clients: Client[] = [];
const services: PaymentsService[] = [];
beforeAll(buildExamples, 180_000);
afterEach(async () => {
  for (const client of clients.splice(0)) await closeQuietly(client);
  await cleanup();
  for (const service of services.splice(0)) await service.close();
  for (const schema of dropSchemas.splice(0)) {
    await admin((client) => client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
  }
});

async function paymentsService(...faults: PaymentFault[]): Promise<PaymentsService> {
  const service = await startPaymentsService();
  services.push(service);
  service.fault(...faults);
  return service;
}

interface RunningExample {
  readonly url: string;
  readonly proc: ChildProcess;
  readonly client: Client;
  stderr(): string;
  /** The JSON lines of its stderr so far. */
  logs(): LogLine[];
}

/** Starts the example on `db` against `service`, waits for its listening line, connects a client. */
async function startPayments(
  db: string,
  service: PaymentsService,
  label = 'example',
): Promise<RunningExample> {
  const example = startExample('durable-payment', {
    IDEM_DB: db,
    PAYMENTS_URL: `${service.url}/`,
    IDEM_PORT: '0',
  });
  onTestFailed(() => {
    process.stderr.write(`--- stderr of ${label} (durable-payment) ---\n${example.stderr()}\n`);
  });
  const logs = () =>
    example
      .stderr()
      .split('\n')
      .map(parseJsonLine)
      .filter((line): line is LogLine => line !== undefined);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${label}: not listening after ${START_MS} ms`)),
      START_MS,
    );
    const look = () => {
      const listening = logs().find((line) => line.event === 'payments.listening');
      if (typeof listening?.url !== 'string') return;
      clearTimeout(timer);
      resolve(listening.url);
    };
    example.proc.stderr?.on('data', look);
    example.proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited (${code ?? signal}) before listening`));
    });
    look();
  });
  const client = await connectHttp(url);
  clients.push(client);
  return { url, proc: example.proc, client, stderr: example.stderr, logs };
}

function exitOf(proc: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (proc.exitCode !== null || proc.signalCode !== null) {
    return Promise.resolve({ code: proc.exitCode, signal: proc.signalCode });
  }
  return new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
}

/** Rejects after `ms` naming `what`, unless `promise` settles first. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

const ACTIVE = new Set(['accepted', 'running', 'cancel_requested']);

/** Polls get_operation until the operation is final (or fails after `ms`, with its last view). */
async function settle(client: Client, operationId: string, ms = SETTLE_MS): Promise<ToolResult> {
  const deadline = Date.now() + ms;
  for (;;) {
    const view = await callTool(client, 'get_operation', { operation_id: operationId });
    if (!ACTIVE.has(String(view.sc.status))) return view;
    if (Date.now() > deadline) {
      throw new Error(`operation ${operationId} still ${String(view.sc.status)} after ${ms} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function paymentArgs(amount = 1250, currency = 'EUR') {
  return { idempotency_key: randomUUID(), workspace: 'acme', amount_cents: amount, currency };
}

/** Starts create_payment; expects it accepted and returns its operation id. */
async function accept(client: Client, args: Record<string, unknown>): Promise<string> {
  const accepted = await callTool(client, 'create_payment', args);
  expect(accepted.sc).toMatchObject({ status: 'accepted', operation_id: expect.any(String) });
  return String(accepted.sc.operation_id);
}

/** The operation succeeded with the service's one payment for it, and a retry replays it. */
async function expectOnePayment(
  client: Client,
  service: PaymentsService,
  args: { amount_cents: number; currency: string },
  operationId: string,
  done: ToolResult,
): Promise<void> {
  const payment = service.paymentFor(`idem-${operationId}`);
  expect(payment, 'the service holds a payment made with the operation key').toBeDefined();
  const id = payment?.id;
  expect(done.sc).toMatchObject({
    status: 'succeeded',
    operation_id: operationId,
    resource_id: id,
    result: { payment_id: id, amount_cents: args.amount_cents, currency: args.currency },
  });
  expect(payment).toMatchObject({ amount_cents: args.amount_cents, currency: args.currency });
}

const FAULTS: Array<[string, PaymentFault[]]> = [
  ['no fault', []],
  ['a reply dropped after the payment was applied', ['drop_after_apply']],
  ['two 503s with Retry-After', ['503', '503']],
  ['a stall after applying (the attempt times out)', ['stall_after_apply']],
  ['a stall before applying (the attempt times out)', ['stall_before']],
];

describe.each(BACKENDS)('examples/durable-payment.ts ($name)', (backend) => {
  it.each(FAULTS)(
    '%s: one payment, succeeded with its id, and the retry replays it',
    async (_name, faults) => {
      const service = await paymentsService(...faults);
      const example = await startPayments(await backend.database(), service);
      const args = paymentArgs();
      const operationId = await accept(example.client, args);
      const done = await settle(example.client, operationId);
      await expectOnePayment(example.client, service, args, operationId, done);
      expect(service.payments()).toHaveLength(1);
      expect(service.requests()).toHaveLength(faults.length + 1);
      expect(new Set(service.requests().map((request) => request.key))).toEqual(
        new Set([`idem-${operationId}`]),
      );
      const retry = await callTool(example.client, 'create_payment', args);
      expect(retry.sc).toMatchObject({
        status: 'succeeded',
        replayed: true,
        operation_id: operationId,
        resource_id: service.payments()[0]?.id,
        payment_id: service.payments()[0]?.id,
      });
      expect(service.payments()).toHaveLength(1);
    },
    SETTLE_MS + START_MS,
  );

  it('the same key with another amount: payload_conflict, and nothing of it is sent', async () => {
    const service = await paymentsService();
    const example = await startPayments(await backend.database(), service);
    const args = paymentArgs(500, 'USD');
    const operationId = await accept(example.client, args);
    const conflict = await callTool(example.client, 'create_payment', { ...args, amount_cents: 501 });
    expect(conflict.isError).toBe(true);
    expect(conflict.sc.error?.code).toBe('payload_conflict');
    await expectOnePayment(
      example.client,
      service,
      args,
      operationId,
      await settle(example.client, operationId),
    );
    expect(service.requests().map((request) => request.body)).toEqual([
      { amount_cents: 500, currency: 'USD' },
    ]);
  }, 60_000);

  it('kill -9 while the service holds the request; a new process takes over: the first payment, once', async () => {
    const service = await paymentsService('stall_after_apply');
    const db = await backend.database();
    const first = await startPayments(db, service, 'first process');
    const args = paymentArgs(9900, 'GBP');
    const operationId = await accept(first.client, args);
    await within(service.holding(1), 20_000, 'the service holding the first request');
    first.proc.kill('SIGKILL');
    expect(await within(exitOf(first.proc), 10_000, 'the first process dying')).toEqual({
      code: null,
      signal: 'SIGKILL',
    });
    const second = await startPayments(db, service, 'second process');
    const done = await settle(second.client, operationId);
    await expectOnePayment(second.client, service, args, operationId, done);
    expect(service.payments()).toHaveLength(1);
    // The second process resent with the same key and got the first payment back.
    expect(service.requests().map((request) => [request.key, request.fault])).toEqual([
      [`idem-${operationId}`, 'stall_after_apply'],
      [`idem-${operationId}`, 'none'],
    ]);
    // The reply can reach the test before the log line written earlier: wait for it, bounded.
    const mine = (line: LogLine) => line.operation_id === operationId;
    await waitForLogLines(second.logs, (line) => mine(line) && line.event === 'op.final', 1);
    const attempts = second.logs().filter((line) => mine(line) && line.event === 'op.attempt');
    expect(attempts.map((line) => line.outcome)).toEqual(['created']);
  }, 90_000);

  it('SIGTERM: stops the worker, closes the server and the store, exits 0', async () => {
    const service = await paymentsService();
    const example = await startPayments(await backend.database(), service);
    const operationId = await accept(example.client, paymentArgs());
    await settle(example.client, operationId);
    example.proc.kill('SIGTERM');
    expect(await within(exitOf(example.proc), 15_000, 'exit after SIGTERM')).toEqual({
      code: 0,
      signal: null,
    });
  }, 60_000);
});

describe.runIf(postgresAvailable)(
  'examples/durable-payment.ts: two processes on one PostgreSQL database',
  () => {
    it('a batch across both servers under mixed faults: one payment per key, all succeeded, both workers at work', async () => {
      const service = await startPaymentsService({ faultsOn: 'first_request_per_key' });
      services.push(service);
      service.fault(
        'drop_after_apply',
        '503',
        'stall_after_apply',
        'none',
        'stall_before',
        'drop_after_apply',
        '503',
        'none',
        'drop_after_apply',
        'none',
      );
      const db = await BACKENDS[1]!.database();
      const servers = [
        await startPayments(db, service, 'process A'),
        await startPayments(db, service, 'process B'),
      ];
      const batch = Array.from({ length: 10 }, (_, i) => ({
        args: paymentArgs(100 + i, i % 2 ? 'EUR' : 'USD'),
        via: servers[i % 2]!,
      }));
      const started = await Promise.all(
        batch.map(async ({ args, via }) => ({ args, via, operationId: await accept(via.client, args) })),
      );
      for (const { args, via, operationId } of started) {
        await expectOnePayment(
          via.client,
          service,
          args,
          operationId,
          await settle(via.client, operationId, 90_000),
        );
      }
      expect(service.payments()).toHaveLength(10);
      expect(new Set(service.payments().map((payment) => payment.key)).size).toBe(10);
      // Each process's own worker settled some of them (bounded wait: logs may trail the replies).
      for (const server of servers) {
        await waitForLogLines(
          server.logs,
          (line) => line.event === 'op.final' && line.outcome === 'succeeded',
          1,
        );
      }
    }, 180_000);
  },
);

describe('examples/durable-payment.ts without PAYMENTS_URL', () => {
  it('says what to set and exits 2', async () => {
    const proc = track(
      spawn(process.execPath, [examplePath('durable-payment')], {
        cwd: REPO_ROOT,
        env: cleanEnv({ IDEM_DB: join(makeTempDir('idem-pay-'), 'payments.sqlite') }),
        stdio: ['ignore', 'ignore', 'pipe'],
      }),
    );
    let stderr = '';
    proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    expect(await within(exitOf(proc), 20_000, 'exit')).toEqual({ code: 2, signal: null });
    expect(stderr).toMatch(/PAYMENTS_URL/);
  }, 30_000);
});
