/**
 * The ready Idempotency-Key handler against a real loopback payments service (node:http) with
 * faults, wired only through public entries (`idem`, `idem/sqlite`, `idem/postgres`, `idem/mcp`,
 * `idem/operations`): a durable tool, `idempotencyKeyHandler`, `startWorker`. Whatever the fault,
 * the service holds exactly one payment per operation, and the operation ends as the answer says.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport, McpServer } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Executor, type JsonObject, type Logger } from '../../packages/idem/src/index.js';
import {
  attachAuthInfo,
  principalAuthInfo,
  registerDurableTool,
  registerOperationTools,
} from '../../packages/idem/src/mcp/index.js';
import {
  clientReferenceHandler,
  idempotencyKeyHandler,
  startWorker,
  type OperationRecord,
} from '../../packages/idem/src/operations/public.js';
import { BACKENDS } from '../helpers/public-backends.js';

const silent: Logger = { info() {}, warn() {}, error() {} };

type Fault = 'drop_after_apply' | 'unavailable';

interface Payment {
  readonly id: string;
  readonly amount_cents: number;
  readonly currency: string;
}

/**
 * A payments API honouring `Idempotency-Key` (a key replays its first payment, with
 * `Idempotent-Replayed: true`); `faults` are played one per request, in order; a `currency` of
 * `XXX` is refused with 422.
 */
async function paymentsService(faults: Fault[]) {
  const byKey = new Map<string, Payment>();
  const requests: Array<{ key: string | undefined; body: Record<string, unknown> }> = [];
  const searches: string[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      if (req.method === 'GET') {
        const reference = new URL(req.url ?? '/', 'http://x').searchParams.get('client_reference');
        const found = reference === null ? undefined : byKey.get(reference);
        searches.push(reference ?? '');
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ data: found === undefined ? [] : [{ ...found, client_reference: reference }] }),
        );
        return;
      }
      const body = JSON.parse(raw) as Record<string, unknown>;
      const key =
        (req.headers['idempotency-key'] as string | undefined) ??
        (typeof body.client_reference === 'string' ? body.client_reference : undefined);
      requests.push({ key, body });
      const fault = faults.shift();
      if (req.method !== 'POST' || req.url !== '/payments' || key === undefined) {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"bad_request"}');
        return;
      }
      if (fault === 'unavailable') {
        res.writeHead(503, { 'retry-after': '1' }).end();
        return;
      }
      if (body.currency === 'XXX') {
        res.writeHead(422, { 'content-type': 'application/json' }).end('{"error":"unsupported_currency"}');
        return;
      }
      const existing = byKey.get(key);
      const payment = existing ?? {
        id: `pay_${byKey.size + 1}`,
        amount_cents: body.amount_cents as number,
        currency: body.currency as string,
      };
      byKey.set(key, payment);
      if (fault === 'drop_after_apply') {
        // The payment is recorded; the reply is lost.
        res.socket?.destroy();
        return;
      }
      res
        .writeHead(existing === undefined ? 201 : 200, {
          'content-type': 'application/json',
          ...(existing === undefined ? {} : { 'idempotent-replayed': 'true' }),
        })
        .end(JSON.stringify(payment));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    byKey,
    requests,
    searches,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

type Structured = Record<string, unknown> & {
  status?: string;
  operation_id?: string;
  resource_id?: string;
  result?: Record<string, unknown>;
  error?: { code: string; retryable: boolean; message: string };
};

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > end) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe.each(BACKENDS)('idempotencyKeyHandler against a faulty payments API ($name)', (backend) => {
  /** A user's payments server: `create_payment` (durable) and the status tools, and its worker. */
  async function setup(faults: Fault[], mode: 'key' | 'reference' = 'key') {
    const { store, close } = await backend.open();
    open.push(close);
    const payments = await paymentsService(faults);
    open.push(payments.close);
    const executor = new Executor<unknown>({ store, authorize: () => true, logger: silent });
    const server = new McpServer({ name: 'payments', version: '1.0.0' });
    registerDurableTool(server, executor, {
      name: 'create_payment',
      version: 1,
      description: 'Creates a payment.',
      inputSchema: { amount_cents: z.number().int().min(1), currency: z.string().length(3) },
      retentionMs: 60_000,
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

    const body = (args: JsonObject) => ({
      amount_cents: args.amount_cents ?? null,
      currency: args.currency ?? null,
    });
    const result = (response: JsonObject) =>
      typeof response.id === 'string'
        ? {
            resourceId: response.id,
            fields: { payment_id: response.id, amount_cents: response.amount_cents ?? null },
          }
        : undefined;
    const handler =
      mode === 'key'
        ? idempotencyKeyHandler({
            url: `${payments.url}/payments`,
            body,
            result,
            providerKeyRetentionMs: 24 * 3_600_000,
          })
        : clientReferenceHandler({
            url: `${payments.url}/payments`,
            body,
            result,
            searchUrl: (reference) =>
              `${payments.url}/payments?client_reference=${encodeURIComponent(reference)}`,
            matches: (response) => response.data,
            landingMs: 0,
          });
    const stop = new AbortController();
    const running = startWorker({
      store,
      handlers: { create_payment: handler },
      pollIntervalMs: 20,
      signal: stop.signal,
      logger: silent,
    });
    open.push(() => running.stop());

    const call = async (name: string, args: Record<string, unknown>) => {
      const result = await client.callTool({ name, arguments: args });
      return { isError: result.isError === true, sc: result.structuredContent as Structured };
    };
    const settle = async (args: Record<string, unknown>) => {
      const started = await call('create_payment', { workspace: 'w', ...args });
      expect(started.sc.status).toBe('accepted');
      const operationId = started.sc.operation_id as string;
      return until(
        () => call('get_operation', { operation_id: operationId }),
        (r) => r.sc.status !== 'accepted' && r.sc.status !== 'running',
      );
    };
    return { store, payments, settle };
  }

  it('a reply dropped after the payment was applied: resent with the same key, one payment, succeeded', async () => {
    const { payments, settle } = await setup(['drop_after_apply']);
    const done = await settle({ idempotency_key: 'k-drop', amount_cents: 1250, currency: 'EUR' });
    expect(payments.byKey.size).toBe(1);
    expect(payments.requests).toHaveLength(2);
    const [first, second] = payments.requests;
    expect(first?.key).toMatch(/^idem-/);
    expect(second?.key).toBe(first?.key);
    expect(first?.body).toEqual({ amount_cents: 1250, currency: 'EUR' });
    expect(done.sc).toMatchObject({
      status: 'succeeded',
      resource_id: 'pay_1',
      result: { payment_id: 'pay_1', amount_cents: 1250 },
    });
  });

  it('503 with Retry-After: waits, then one payment, succeeded', async () => {
    const { payments, settle } = await setup(['unavailable']);
    const started = Date.now();
    const done = await settle({ idempotency_key: 'k-503', amount_cents: 700, currency: 'USD' });
    expect(payments.byKey.size).toBe(1);
    expect(payments.requests).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900); // Retry-After: 1 was honoured
    expect(done.sc).toMatchObject({
      status: 'succeeded',
      resource_id: 'pay_1',
      result: { payment_id: 'pay_1', amount_cents: 700 },
    });
  });

  it('422: rejected at once, never retried, no payment, failed invalid_argument', async () => {
    const { payments, settle } = await setup([]);
    const done = await settle({ idempotency_key: 'k-422', amount_cents: 300, currency: 'XXX' });
    // Give a wrong retry the time it would need to show.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(payments.requests).toHaveLength(1);
    expect(payments.byKey.size).toBe(0);
    expect(done.sc).toMatchObject({
      status: 'failed',
      error: { code: 'invalid_argument', retryable: false },
    });
  });

  it('clientReferenceHandler: a reply dropped after applying is settled by one search, one payment, succeeded', async () => {
    const { payments, settle } = await setup(['drop_after_apply'], 'reference');
    const done = await settle({ idempotency_key: 'k-ref', amount_cents: 990, currency: 'EUR' });
    expect(payments.byKey.size).toBe(1);
    expect(payments.requests).toHaveLength(1); // not resent: the search found it
    expect(payments.requests[0]?.key).toMatch(/^idem-/);
    expect(payments.requests[0]?.body).toMatchObject({
      amount_cents: 990,
      client_reference: payments.requests[0]?.key,
    });
    expect(payments.searches).toEqual([payments.requests[0]?.key]);
    expect(done.sc).toMatchObject({
      status: 'succeeded',
      resource_id: 'pay_1',
      result: { payment_id: 'pay_1', amount_cents: 990 },
    });
  });

  it('clientReferenceHandler: 503 with Retry-After, then one payment, succeeded', async () => {
    const { payments, settle } = await setup(['unavailable'], 'reference');
    const done = await settle({ idempotency_key: 'k-ref-503', amount_cents: 10, currency: 'EUR' });
    expect(payments.byKey.size).toBe(1);
    expect(payments.requests).toHaveLength(2);
    expect(done.sc).toMatchObject({ status: 'succeeded', resource_id: 'pay_1' });
  });
});

describe('idempotencyKeyHandler classification (one dispatch, no worker)', () => {
  const context = (signal = new AbortController().signal) => ({
    providerKey: 'idem-op-1',
    timeoutMs: 2_000,
    signal,
  });
  const operation = { operationId: 'op-1', args: { amount_cents: 5 } } as unknown as OperationRecord;

  /** A service that answers every request with `status` and `body`. */
  async function answering(status: number, body: string, headers: Record<string, string> = {}) {
    const server = createServer((_req, res) => res.writeHead(status, headers).end(body));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    open.push(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/payments`;
  }
  const handlerFor = (url: string) =>
    idempotencyKeyHandler({
      url,
      body: (args) => args,
      result: (response) =>
        typeof response.id === 'string' ? { resourceId: response.id, fields: {} } : undefined,
    });

  it.each([
    [401, '{"error":"unauthorized"}', { kind: 'rejected', code: 'forbidden', status: 401 }],
    [403, '{}', { kind: 'rejected', code: 'forbidden', status: 403, reason: 'http_403' }],
    [
      400,
      '{"error":"bad amount, see docs"}',
      { kind: 'rejected', code: 'invalid_argument', reason: 'http_400' },
    ],
    [408, '', { kind: 'ambiguous', reason: 'http_408' }],
    [409, '', { kind: 'ambiguous', reason: 'http_409' }],
    [429, '', { kind: 'throttled', status: 429 }],
    [500, '', { kind: 'ambiguous', reason: 'http_500' }],
    [201, 'not json', { kind: 'ambiguous', reason: 'unreadable 201 body' }],
    [201, '{"no_id":true}', { kind: 'ambiguous', reason: 'unreadable 201 body' }],
    [201, '{"id":"pay_7"}', { kind: 'created', resourceId: 'pay_7', replayed: false }],
  ] as const)('HTTP %i %s', async (status, body, expected) => {
    const outcome = await handlerFor(await answering(status, body)).dispatch(operation, context());
    expect(outcome).toMatchObject(expected);
  });

  it('a refused connection is throttled and unsent; arguments that cannot be sent are rejected', async () => {
    const url = await answering(200, '{}');
    const port = new URL(url).port;
    for (const close of open.splice(0)) await close();
    expect(await handlerFor(`http://127.0.0.1:${port}/payments`).dispatch(operation, context())).toEqual({
      kind: 'throttled',
      status: 0,
      unsent: true,
    });
    const throwing = idempotencyKeyHandler({
      url: `http://127.0.0.1:${port}/payments`,
      body: () => {
        throw new Error('no amount');
      },
      result: () => undefined,
    });
    expect(await throwing.dispatch(operation, context())).toMatchObject({
      kind: 'rejected',
      code: 'invalid_argument',
      reason: 'invalid_args',
    });
  });

  it.each([
    [200, '{"data":[]}', { kind: 'absent' }],
    [200, '{"data":[{"id":"pay_x","client_reference":"idem-other"}]}', { kind: 'absent' }],
    [
      200,
      '{"data":[{"id":"pay_3","client_reference":"idem-op-1"}]}',
      { kind: 'created', resourceId: 'pay_3' },
    ],
    [200, '{"data":{}}', { kind: 'ambiguous', reason: 'lookup unreadable 200 body' }],
    [
      200,
      '{"data":[{"client_reference":"idem-op-1"}]}',
      { kind: 'ambiguous', reason: 'lookup unreadable match' },
    ],
    [500, '', { kind: 'ambiguous', reason: 'lookup http_500' }],
  ] as const)('clientReferenceHandler reconcile: HTTP %i %s', async (status, body, expected) => {
    const url = await answering(status, body);
    const handler = clientReferenceHandler({
      url,
      body: (args) => args,
      result: (response) =>
        typeof response.id === 'string' ? { resourceId: response.id, fields: {} } : undefined,
      searchUrl: (reference) => `${url}?client_reference=${reference}`,
      matches: (response) => response.data,
    });
    expect(handler.mode).toBe('reference');
    expect(await handler.reconcile(operation, context())).toMatchObject(expected);
  });

  it('nextAction names the provider, describe(args), the key as sent and the window; "a request" by default', () => {
    const window = { providerKey: 'idem-op-1', from: Date.UTC(2026, 0, 1), to: Date.UTC(2026, 0, 1, 0, 5) };
    const between = 'between 2026-01-01T00:00:00.000Z and 2026-01-01T00:05:00.000Z';
    const advice =
      'then have an operator resolve this operation as succeeded (with the resource id) or failed. Do not ' +
      'retry with a new idempotency_key before that: it could apply the effect twice.';
    const payments = {
      url: 'https://api.example.com/payments',
      body: (args: JsonObject) => args,
      result: () => undefined,
      describe: (a: JsonObject) => `a payment of ${String(a.amount_cents)} ${String(a.currency)}`,
    };
    const euros = { args: { amount_cents: 5, currency: 'EUR' } } as unknown as OperationRecord;
    expect(idempotencyKeyHandler({ ...payments, providerName: 'Stripe' }).nextAction(euros, window)).toBe(
      `Check Stripe for a payment of 5 EUR with Idempotency-Key idem-op-1 made ${between}; ${advice}`,
    );
    expect(
      idempotencyKeyHandler({ ...payments, describe: undefined }).nextAction(euros, {
        ...window,
        keyRetentionPassedMs: 86_400_000,
      }),
    ).toBe(
      'No resend was made: api.example.com keeps an Idempotency-Key for 86400000 ms and may have forgotten ' +
        'this one, so a resend could apply it again. Check api.example.com for a request with ' +
        `Idempotency-Key idem-op-1 made ${between}; ${advice}`,
    );
    const referenced = clientReferenceHandler({
      ...payments,
      searchUrl: (reference) => `https://api.example.com/payments?client_reference=${reference}`,
      matches: (response) => response.data,
    });
    expect(referenced.nextAction(euros, window)).toBe(
      `Search api.example.com for a payment of 5 EUR with client_reference idem-op-1, created ${between}; ${advice}`,
    );
    // A describe that throws or answers no string falls back to "a request".
    const throwing = idempotencyKeyHandler({
      ...payments,
      describe: () => {
        throw new Error('no currency');
      },
    });
    expect(throwing.nextAction(euros, window)).toMatch(/^Check api\.example\.com for a request with/);
    const numeric = clientReferenceHandler({
      ...payments,
      describe: () => 7 as unknown as string,
      searchUrl: (reference) => reference,
      matches: () => [],
    });
    expect(numeric.nextAction(euros, window)).toMatch(/^Search api\.example\.com for a request with/);
  });

  it('the operator-settled success has the shape given by successFields', async () => {
    const handler = idempotencyKeyHandler({
      url: 'http://127.0.0.1:9/payments',
      body: (args) => args,
      result: () => undefined,
      successFields: (args, id) => ({ payment_id: id, amount_cents: args.amount_cents ?? null }),
    });
    const operation = { args: { amount_cents: 5 } } as unknown as OperationRecord;
    expect(handler.mode).toBe('key');
    expect(handler.successFields?.(operation, 'pay_9')).toEqual({ payment_id: 'pay_9', amount_cents: 5 });
  });
});
