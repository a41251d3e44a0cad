/**
 * The ready handler for an HTTP API with neither an idempotency key nor a lookup (`unkeyedHandler`,
 * mode `none`), against a real loopback orders service (node:http) with faults, wired only through
 * public entries (`idem`, `idem/sqlite`, `idem/postgres`, `idem/mcp`, `idem/operations`): a
 * durable tool, the handler, `startWorker`. A request that provably was not applied is sent again;
 * one that may have been never is: the operation ends `outcome_unknown` for an operator.
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
  startWorker,
  unkeyedHandler,
  type OperationRecord,
} from '../../packages/idem/src/operations/public.js';
import { BACKENDS } from '../helpers/public-backends.js';

const silent: Logger = { info() {}, warn() {}, error() {} };

type Fault = 'drop_after_apply' | 'unavailable';

interface SentRequest {
  readonly headers: IncomingMessage['headers'];
  readonly body: Record<string, unknown>;
}

/**
 * An orders API that knows no key: every `POST /orders` it accepts makes a new order. `faults` are
 * played one per request, in order; an `item` of `nope` is refused with 422.
 */
async function ordersService(faults: Fault[]) {
  const orders: Array<{ id: string; item: unknown }> = [];
  const requests: SentRequest[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw) as Record<string, unknown>;
      requests.push({ headers: req.headers, body });
      const fault = faults.shift();
      if (req.method !== 'POST' || req.url !== '/orders') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
        return;
      }
      if (fault === 'unavailable') {
        res.writeHead(503, { 'retry-after': '0' }).end();
        return;
      }
      if (body.item === 'nope') {
        res.writeHead(422, { 'content-type': 'application/json' }).end('{"error":"unknown_item"}');
        return;
      }
      const order = { id: `ord_${orders.length + 1}`, item: body.item };
      orders.push(order);
      if (fault === 'drop_after_apply') {
        // The order is made; the reply is lost.
        res.socket?.destroy();
        return;
      }
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify(order));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    orders,
    requests,
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
  next_action?: string;
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

const body = (args: JsonObject) => ({ item: args.item ?? null, quantity: args.quantity ?? null });
const result = (response: JsonObject) =>
  typeof response.id === 'string'
    ? { resourceId: response.id, fields: { order_id: response.id, item: response.item ?? null } }
    : undefined;
const describeOrder = (args: JsonObject) => `an order of ${String(args.quantity)} ${String(args.item)}`;

describe.each(BACKENDS)('unkeyedHandler against a faulty orders API without keys ($name)', (backend) => {
  /** A user's orders server: `place_order` (durable) and the status tools, and its worker. */
  async function setup(faults: Fault[]) {
    const { store, close } = await backend.open();
    open.push(close);
    const service = await ordersService(faults);
    open.push(service.close);
    const executor = new Executor<unknown>({ store, authorize: () => true, logger: silent });
    const server = new McpServer({ name: 'orders', version: '1.0.0' });
    registerDurableTool(server, executor, {
      name: 'place_order',
      version: 1,
      description: 'Places an order.',
      inputSchema: { item: z.string(), quantity: z.number().int().min(1) },
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
    const stop = new AbortController();
    const running = startWorker({
      store,
      handlers: {
        place_order: unkeyedHandler({
          url: `${service.url}/orders`,
          body,
          result,
          providerName: 'the orders API',
          describe: describeOrder,
        }),
      },
      pollIntervalMs: 20,
      signal: stop.signal,
      logger: silent,
    });
    open.push(() => running.stop());

    const call = async (name: string, args: Record<string, unknown>) => {
      const answer = await client.callTool({ name, arguments: args });
      return { isError: answer.isError === true, sc: answer.structuredContent as Structured };
    };
    const settle = async (args: Record<string, unknown>) => {
      const started = await call('place_order', { workspace: 'w', ...args });
      expect(started.sc.status).toBe('accepted');
      const operationId = started.sc.operation_id as string;
      return until(
        () => call('get_operation', { operation_id: operationId }),
        (r) => r.sc.status !== 'accepted' && r.sc.status !== 'running',
      );
    };
    return { service, settle };
  }

  it('503 then 201: sent again (nothing was applied), one order, succeeded; no key is ever sent', async () => {
    const { service, settle } = await setup(['unavailable']);
    const done = await settle({ idempotency_key: 'k-503', item: 'tea', quantity: 2 });
    expect(service.orders).toHaveLength(1);
    expect(service.requests).toHaveLength(2);
    for (const request of service.requests) {
      expect(request.body).toEqual({ item: 'tea', quantity: 2 });
      expect(request.headers['idempotency-key']).toBeUndefined();
    }
    expect(done.sc).toMatchObject({
      status: 'succeeded',
      resource_id: 'ord_1',
      result: { order_id: 'ord_1', item: 'tea' },
    });
  });

  it('a reply dropped after the order was made: never resent, outcome_unknown, the sentence names it', async () => {
    const { service, settle } = await setup(['drop_after_apply']);
    const done = await settle({ idempotency_key: 'k-drop', item: 'coffee', quantity: 3 });
    // Give a wrong resend the time it would need to show.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(service.requests).toHaveLength(1);
    expect(service.orders).toHaveLength(1);
    expect(done.sc.status).toBe('outcome_unknown');
    expect(done.sc.next_action).toMatch(
      /^Check the orders API for an order of 3 coffee made between \d{4}-\d\d-\d\dT[\d:.]+Z and \d{4}-\d\d-\d\dT[\d:.]+Z \(this provider keeps no key: provider key idem-\S+ was not sent, so look for the effect itself\); then have an operator resolve this operation as succeeded \(with the resource id\) or failed\. Do not retry with a new idempotency_key before that/,
    );
  });

  it('422: rejected at once, never retried, no order, failed invalid_argument', async () => {
    const { service, settle } = await setup([]);
    const done = await settle({ idempotency_key: 'k-422', item: 'nope', quantity: 1 });
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(service.requests).toHaveLength(1);
    expect(service.orders).toHaveLength(0);
    expect(done.sc).toMatchObject({
      status: 'failed',
      error: { code: 'invalid_argument', retryable: false },
    });
  });
});

describe('unkeyedHandler (no worker)', () => {
  const operation = { operationId: 'op-1', args: { item: 'tea', quantity: 2 } } as unknown as OperationRecord;
  const window = { providerKey: 'idem-op-1', from: Date.UTC(2026, 0, 1), to: Date.UTC(2026, 0, 1, 0, 5) };

  it('mode none; reconcile is unsupported; the operator-settled success has the shape of successFields', async () => {
    const handler = unkeyedHandler({
      url: 'http://127.0.0.1:9/orders',
      body,
      result,
      successFields: (args, id) => ({ order_id: id, item: args.item ?? null }),
    });
    expect(handler.mode).toBe('none');
    expect(handler.providerKeyRetentionMs).toBeUndefined();
    expect(
      await handler.reconcile(operation, {
        providerKey: 'idem-op-1',
        timeoutMs: 100,
        signal: new AbortController().signal,
      }),
    ).toEqual({ kind: 'unsupported' });
    expect(handler.successFields?.(operation, 'ord_9')).toEqual({ order_id: 'ord_9', item: 'tea' });
  });

  it('nextAction: the URL host by default, "a request" when describe is absent, throws or is no string', () => {
    const base = { url: 'http://orders.example:8080/orders', body, result };
    expect(unkeyedHandler(base).nextAction(operation, window)).toBe(
      'Check orders.example:8080 for a request made between 2026-01-01T00:00:00.000Z and ' +
        '2026-01-01T00:05:00.000Z (this provider keeps no key: provider key idem-op-1 was not sent, so ' +
        'look for the effect itself); then have an operator resolve this operation as succeeded (with ' +
        'the resource id) or failed. Do not retry with a new idempotency_key before that: it could ' +
        'apply the effect twice.',
    );
    const bad: Array<(args: JsonObject) => string> = [
      () => {
        throw new Error('no item');
      },
      () => 42 as unknown as string,
      () => '',
    ];
    for (const broken of bad)
      expect(unkeyedHandler({ ...base, describe: broken }).nextAction(operation, window)).toMatch(
        /^Check orders\.example:8080 for a request made between/,
      );
    expect(unkeyedHandler({ ...base, describe: describeOrder }).nextAction(operation, window)).toMatch(
      /^Check orders\.example:8080 for an order of 2 tea made between/,
    );
  });
});
