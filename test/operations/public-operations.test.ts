/**
 * A user's own durable tool, wired only through public entries (`idem`, `idem/sqlite`,
 * `idem/postgres`, `idem/mcp`, `idem/operations`): the handler, the worker started with one call
 * and stopped by an AbortSignal, the status and cancel tools registered with one call (owner-only,
 * every answer validated by a real SDK client against the tool's output schema), the outbox
 * dispatcher, and the start-up warning for a durable tool without its status tool.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport, McpServer } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  DEFAULT_RETRY_POLICY as ROOT_DEFAULT_RETRY_POLICY,
  Executor,
  type Logger,
} from '../../packages/idem/src/index.js';
import { SqliteStore, openSqlite } from '../../packages/idem/src/adapters/sqlite/index.js';
import {
  attachAuthInfo,
  principalAuthInfo,
  registerDurableTool,
  registerIdempotentTool,
  registerOperationTools,
} from '../../packages/idem/src/mcp/index.js';
import {
  DEFAULT_RETRY_POLICY,
  startOutboxDispatcher,
  startWorker,
  type DispatchOutcome,
  type DurableHandler,
  type OperationRecord,
} from '../../packages/idem/src/operations/public.js';
import { BACKENDS } from '../helpers/public-backends.js';

const silent: Logger = { info() {}, warn() {}, error() {} };

/** A payment provider that is just a function: it remembers the keys it applied. */
function fakePayments() {
  const byKey = new Map<string, string>();
  const handler: DurableHandler = {
    mode: 'key',
    async dispatch(operation: OperationRecord, context): Promise<DispatchOutcome> {
      const existing = byKey.get(context.providerKey);
      const id = existing ?? `pay_${byKey.size + 1}`;
      byKey.set(context.providerKey, id);
      const amount = (operation.args as { amount_cents: number }).amount_cents;
      return {
        kind: 'created',
        resourceId: id,
        fields: { payment_id: id, amount_cents: amount },
        replayed: existing !== undefined,
      };
    },
    async reconcile() {
      return { kind: 'unsupported' };
    },
    nextAction: (_operation, context) => `Look for payment key ${context.providerKey} at the provider.`,
  };
  return { handler, byKey };
}

type Structured = Record<string, unknown> & {
  status?: string;
  operation_id?: string;
  next_action?: string;
  cancel?: string;
  result?: Record<string, unknown>;
  error?: { code: string; retryable: boolean; message: string };
};

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** A user's server, as one principal sees it over a real SDK client (which validates outputs). */
async function connect(
  executor: Executor<unknown>,
  principal: string,
  names: { statusTool?: string; cancelTool?: string } = {},
) {
  const server = new McpServer({ name: 'payments', version: '1.0.0' });
  registerDurableTool(server, executor, {
    name: 'create_payment',
    version: 1,
    description: 'Creates a payment.',
    inputSchema: { amount_cents: z.number().int().min(1) },
    retentionMs: 60_000,
    ...(names.statusTool === undefined ? {} : { statusTool: names.statusTool }),
  });
  registerOperationTools(server, executor, names);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  attachAuthInfo(serverSide, principalAuthInfo(principal));
  const client = new Client({ name: principal, version: '0' });
  await client.connect(clientSide);
  open.push(async () => {
    await client.close();
    await server.close();
  });
  return async (name: string, args: Record<string, unknown>) => {
    const result = await client.callTool({ name, arguments: args });
    return { isError: result.isError === true, sc: result.structuredContent as Structured };
  };
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > end) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe.each(BACKENDS)('a user’s durable tool through public entries ($name)', (backend) => {
  async function setup() {
    const { store, close } = await backend.open();
    open.push(close);
    const executor = new Executor<unknown>({ store, authorize: () => true, logger: silent });
    return { store, executor };
  }

  it('runs on startWorker, stops on its signal; get_operation/cancel_operation are owner-only', async () => {
    const { store, executor } = await setup();
    const payments = fakePayments();
    const alice = await connect(executor, 'alice');
    const bob = await connect(executor, 'bob');

    const started = await alice('create_payment', {
      workspace: 'w',
      idempotency_key: 'k-1',
      amount_cents: 500,
    });
    expect(started.sc).toMatchObject({ status: 'accepted' });
    expect(started.sc.next_action).toContain(
      `Call get_operation with operation_id ${started.sc.operation_id}`,
    );
    const operationId = started.sc.operation_id as string;

    const stop = new AbortController();
    const running = startWorker({
      store,
      handlers: { create_payment: payments.handler },
      pollIntervalMs: 20,
      signal: stop.signal,
      logger: silent,
    });
    open.push(() => running.stop());
    const done = await until(
      () => alice('get_operation', { operation_id: operationId }),
      (r) => r.sc.status === 'succeeded',
    );
    expect(done).toMatchObject({
      isError: false,
      sc: {
        status: 'succeeded',
        operation_id: operationId,
        operation: 'create_payment',
        resource_id: 'pay_1',
        result: { status: 'succeeded', payment_id: 'pay_1', amount_cents: 500, resource_id: 'pay_1' },
      },
    });
    expect([...payments.byKey.keys()]).toEqual([`idem-${operationId}`]);

    // Another principal: the answer an unknown id gets, with a coded, non-retryable error.
    for (const tool of ['get_operation', 'cancel_operation']) {
      const other = await bob(tool, { operation_id: operationId });
      expect(other).toMatchObject({ isError: true, sc: { error: { code: 'not_found', retryable: false } } });
      const unknown = await bob(tool, { operation_id: 'op_nope' });
      expect(unknown.sc.error).toEqual(other.sc.error);
    }
    const invalid = await alice('get_operation', {});
    expect(invalid).toMatchObject({
      isError: true,
      sc: { error: { code: 'invalid_argument', retryable: false } },
    });
    const cancelDone = await alice('cancel_operation', { operation_id: operationId });
    expect(cancelDone.sc).toMatchObject({ status: 'succeeded', cancel: 'already_final' });

    // Aborting the signal stops the worker: a new operation is no longer carried.
    stop.abort();
    await running.stopped;
    const later = await alice('create_payment', {
      workspace: 'w',
      idempotency_key: 'k-2',
      amount_cents: 700,
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const still = await alice('get_operation', { operation_id: later.sc.operation_id as string });
    expect(still.sc.status).toBe('accepted');
    expect(payments.byKey.size).toBe(1);
  });

  it('a fingerprint that leaves out a free-text field: a rephrased retry is the same operation, another amount a conflict', async () => {
    const { executor } = await setup();
    const server = new McpServer({ name: 'payments', version: '1.0.0' });
    registerDurableTool(server, executor, {
      name: 'create_payment',
      version: 1,
      description: 'Creates a payment.',
      inputSchema: { amount_cents: z.number().int().min(1), memo: z.string().optional() },
      fingerprint: { exclude: ['memo'] },
    });
    registerOperationTools(server, executor);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    attachAuthInfo(serverSide, principalAuthInfo('alice'));
    const client = new Client({ name: 'alice', version: '0' });
    await client.connect(clientSide);
    open.push(async () => {
      await client.close();
      await server.close();
    });
    const call = async (args: Record<string, unknown>) =>
      (await client.callTool({ name: 'create_payment', arguments: args })).structuredContent as Structured;
    const first = await call({ workspace: 'w', idempotency_key: 'k-fp', amount_cents: 500, memo: 'rent' });
    expect(first.status).toBe('accepted');
    const rephrased = await call({
      workspace: 'w',
      idempotency_key: 'k-fp',
      amount_cents: 500,
      memo: 'the rent for December',
    });
    // The same operation, not yet carried out (no worker here): after the bounded wait, its handle.
    expect(rephrased).toMatchObject({
      status: 'running',
      operation_id: first.operation_id,
      error: { code: 'in_progress', retryable: true },
    });
    const other = await call({ workspace: 'w', idempotency_key: 'k-fp', amount_cents: 501, memo: 'rent' });
    expect(other.error).toMatchObject({ code: 'payload_conflict', retryable: false });
    const tool = (await client.listTools()).tools.find((t) => t.name === 'create_payment');
    expect(tool?.description).toMatch(/amount_cents/);
  });

  it('renamed tools: next_action names the status tool registered; a cancel before dispatch ends cancelled', async () => {
    const { store, executor } = await setup();
    const payments = fakePayments();
    const call = await connect(executor, 'alice', {
      statusTool: 'payment_status',
      cancelTool: 'cancel_payment',
    });
    const started = await call('create_payment', {
      workspace: 'w',
      idempotency_key: 'k-1',
      amount_cents: 100,
    });
    expect(started.sc.next_action).toContain('Call payment_status with operation_id');
    const operationId = started.sc.operation_id as string;
    const cancel = await call('cancel_payment', { operation_id: operationId });
    expect(cancel.sc).toMatchObject({ status: 'cancel_requested', cancel: 'requested' });
    expect((await call('cancel_payment', { operation_id: operationId })).sc.cancel).toBe('already_requested');

    const running = startWorker({
      store,
      handlers: { create_payment: payments.handler },
      pollIntervalMs: 20,
      logger: silent,
    });
    open.push(() => running.stop());
    const done = await until(
      () => call('payment_status', { operation_id: operationId }),
      (r) => r.sc.status === 'cancelled',
    );
    expect(done.sc.status).toBe('cancelled');
    expect(payments.byKey.size).toBe(0);
    await running.stop();
    await running.stopped;
  });
});

describe('idem/operations entry', () => {
  it('DEFAULT_RETRY_POLICY is the same object from idem and idem/operations', () => {
    expect(DEFAULT_RETRY_POLICY).toBe(ROOT_DEFAULT_RETRY_POLICY);
    expect(DEFAULT_RETRY_POLICY).toMatchObject({ totalMs: 30_000, attemptTimeoutMs: 8_000, maxAttempts: 3 });
  });

  it('an already aborted signal starts nothing', async () => {
    const store = new SqliteStore(openSqlite(':memory:'));
    open.push(async () => store.close());
    const running = startWorker({
      store: store as never,
      handlers: {},
      signal: AbortSignal.abort(),
      logger: silent,
    });
    await running.stopped;
    await running.stop();
  });

  it('registerDurableTool warns at start-up when its status tool is not registered', async () => {
    const store = new SqliteStore(openSqlite(':memory:'));
    open.push(async () => store.close());
    const warnings: Array<[string, unknown]> = [];
    const logger: Logger = { ...silent, warn: (event, fields) => warnings.push([event, fields]) };
    const executor = new Executor<unknown>({ store: store as never, authorize: () => true, logger });
    const tool = (name: string, statusTool?: string) => ({
      name,
      version: 1,
      description: 'Creates a payment.',
      inputSchema: { amount_cents: z.number().int() },
      retentionMs: 60_000,
      ...(statusTool === undefined ? {} : { statusTool }),
    });
    const bare = new McpServer({ name: 'bare', version: '1' });
    registerDurableTool(bare, executor, tool('create_payment'));
    const renamed = new McpServer({ name: 'renamed', version: '1' });
    registerDurableTool(renamed, executor, tool('create_refund', 'refund_status'));
    registerOperationTools(renamed, executor); // get_operation, not refund_status
    const complete = new McpServer({ name: 'complete', version: '1' });
    registerDurableTool(complete, executor, tool('create_charge'));
    registerOperationTools(complete, executor);
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toEqual([
      ['tool.status_tool_missing', { tool: 'create_payment', status_tool: 'get_operation' }],
      ['tool.status_tool_missing', { tool: 'create_refund', status_tool: 'refund_status' }],
    ]);
  });

  it('startOutboxDispatcher sends what an effect enqueued, once, with its Idempotency-Key', async () => {
    const received: Array<{ key: string | undefined; body: string }> = [];
    const receiver = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        received.push({ key: req.headers['idempotency-key'] as string | undefined, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    open.push(() => new Promise((resolve) => receiver.close(() => resolve())));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

    const store = new SqliteStore(openSqlite(':memory:'));
    open.push(async () => store.close());
    const executor = new Executor<unknown>({ store: store as never, authorize: () => true, logger: silent });
    const server = new McpServer({ name: 'notify', version: '1' });
    registerIdempotentTool(server, executor, {
      name: 'notify',
      version: 1,
      description: 'Queues a notification.',
      inputSchema: { text: z.string() },
      retentionMs: 60_000,
      effect: (_app, args, context) => {
        void context.enqueue({
          destination: url,
          dedupKey: `n:${context.operationId}`,
          payload: { text: args.text },
        });
        return { resource_id: context.operationId };
      },
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    attachAuthInfo(serverSide, principalAuthInfo('alice'));
    const client = new Client({ name: 'c', version: '0' });
    await client.connect(clientSide);
    open.push(async () => {
      await client.close();
      await server.close();
    });
    const result = await client.callTool({
      name: 'notify',
      arguments: { workspace: 'w', idempotency_key: 'k', text: 'hello' },
    });
    const operationId = (result.structuredContent as Structured).operation_id;

    const stop = new AbortController();
    const dispatcher = startOutboxDispatcher({
      store: store as never,
      pollIntervalMs: 20,
      signal: stop.signal,
      logger: silent,
    });
    await until(
      async () => received.length,
      (n) => n > 0,
    );
    stop.abort();
    await dispatcher.stopped;
    expect(received).toEqual([{ key: `n:${operationId}`, body: JSON.stringify({ text: 'hello' }) }]);
  });
});
