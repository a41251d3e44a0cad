import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { LogFields } from '../../packages/idem/src/core/logger.js';
import { Executor, type Authorize } from '../../packages/idem/src/executor/executor.js';
import { durableTool, idempotentTool } from '../../packages/idem/src/mcp/idempotent-tool.js';
import { registerIdemTool } from '../../packages/idem/src/mcp/register-idempotent-tool.js';
import { startHttpServer, type RunningHttpServer } from '../../packages/idem-cli/src/server/http-server.js';
import { TokenRegistry } from '../../packages/idem-cli/src/server/token-registry.js';
import { openTestStore, type SqliteTestStore, type TestStore } from '../helpers/store-fixtures.js';
import { openPostgresTestStore, postgresAvailable } from '../helpers/postgres-fixtures.js';

// The 2026-07-28 revision: closing the stream is cancellation; the 2025 revisions cancel with
// `notifications/cancelled`. Against Idem's own HTTP door (startHttpServer, as `idem serve` runs it)
// in this process, over real HTTP, with a tool of the test's own: an idempotent call whose client
// went away either committed (a retry under a new JSON-RPC id replays) or left nothing (a retry
// executes), never anything between; an accepted durable operation stays accepted.

const GRANT = { principal: 'dev', workspaces: ['default'] };
const REVISION_2026 = '2026-07-28';
const REVISION_2025 = '2025-11-25';
type Era = typeof REVISION_2026 | typeof REVISION_2025;
const ERAS: readonly Era[] = [REVISION_2026, REVISION_2025];

const BACKENDS = [
  { name: 'sqlite', open: async (): Promise<TestStore> => openTestStore() },
  ...(postgresAvailable ? [{ name: 'postgres', open: () => openPostgresTestStore() }] : []),
];

/** A promise with its resolver. */
function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

interface Harness {
  readonly url: string;
  readonly store: TestStore;
  readonly executor: Executor<unknown>;
  /** Resolves with the `outcome` of the `idem.call` lines logged, once there are `count` of them. */
  calls(count: number): Promise<string[]>;
  /** Resolves when the server sees the client close an exchange before its answer was written. */
  closedEarly(): Promise<void>;
  close(): Promise<void>;
}

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const harness of harnesses.splice(0)) await harness.close();
});

async function startHarness(
  open: () => Promise<TestStore>,
  options: {
    authorize?: Authorize;
    inFlightWaitMs?: number;
    sharesStore?: boolean;
    /** Awaited inside the transaction after the note is written (PostgreSQL's effect awaits it). */
    afterInsert?: () => Promise<void>;
  } = {},
): Promise<Harness> {
  const store = await open();
  const outcomes: string[] = [];
  let logged = () => {};
  const record = (event: string, fields?: LogFields) => {
    if (event !== 'idem.call') return;
    outcomes.push(String(fields?.outcome));
    logged();
  };
  const executorLogger = { info: record, warn: record, error: record };
  const executor = new Executor<unknown>({
    store: store.store,
    faults: store.faults,
    logger: executorLogger,
    authorize: options.authorize ?? (() => true),
    ...(options.inFlightWaitMs === undefined ? {} : { inFlightWaitMs: options.inFlightWaitMs }),
  });
  const note = idempotentTool(executor, {
    name: 'create_note',
    version: 1,
    description: 'Writes a note.',
    inputSchema: z.object({ body: z.string() }),
    effect: (app, args, context) =>
      store
        .noteOperation(options.afterInsert === undefined ? {} : { afterInsert: options.afterInsert })
        .effect(app, { body: args.body }, context),
  });
  const deploy = durableTool(executor, {
    name: 'start_deployment',
    version: 1,
    description: 'Starts a deployment.',
    inputSchema: z.object({ service: z.string() }),
  });
  const running: RunningHttpServer = await startHttpServer(
    {
      registry: TokenRegistry.fixed(GRANT),
      logger: executorLogger,
      createMcpServer: () => {
        const server = new McpServer({ name: 'stream-close', version: '0.0.0' });
        registerIdemTool(server, note);
        registerIdemTool(server, deploy);
        return server;
      },
      close: async () => undefined,
    },
    { host: '127.0.0.1', port: 0, devGrant: GRANT },
  );
  let early = gate();
  running.server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
    res.once('close', () => {
      if (!res.writableFinished) early.open();
    });
  });
  const harness: Harness = {
    url: running.url,
    store,
    executor,
    calls: (count) =>
      new Promise((resolve) => {
        logged = () => {
          if (outcomes.length >= count) resolve([...outcomes]);
        };
        logged();
      }),
    closedEarly: async () => {
      await early.promise;
      early = gate();
    },
    close: async () => {
      await running.close();
      if (options.sharesStore !== true) await store.close();
    },
  };
  harnesses.push(harness);
  return harness;
}

const META = {
  'io.modelcontextprotocol/protocolVersion': REVISION_2026,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'stream-close', version: '0' },
};

let nextId = 1;

/** One POST of a JSON-RPC message in `era`; `signal` closes the exchange from the client side. */
async function post(
  url: string,
  era: Era,
  message: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<{ status: number; body: Record<string, unknown> | undefined }> {
  const modern = era === REVISION_2026;
  const params = (message.params ?? {}) as Record<string, unknown>;
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': era,
  };
  if (modern) {
    headers['Mcp-Method'] = String(message.method);
    if (typeof params.name === 'string') headers['Mcp-Name'] = params.name;
    // The key argument is marked x-mcp-header: at this revision it travels as a header too.
    const key = (params.arguments as { idempotency_key?: unknown } | undefined)?.idempotency_key;
    if (typeof key === 'string') headers['Mcp-Param-Idempotency-Key'] = key;
  }
  const body = modern ? { ...message, params: { ...params, _meta: META } } : message;
  const response = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', ...body }),
    ...(signal === undefined ? {} : { signal }),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>),
  };
}

type Structured = Record<string, unknown> & { replayed?: boolean; error?: { code: string } };

/** A tools/call under a fresh JSON-RPC id; its structuredContent. */
async function callTool(
  url: string,
  era: Era,
  name: string,
  args: Record<string, unknown>,
): Promise<Structured> {
  const answer = await post(url, era, {
    id: nextId++,
    method: 'tools/call',
    params: { name, arguments: args },
  });
  expect(answer.status).toBe(200);
  const result = answer.body?.result as { structuredContent: Structured };
  return result.structuredContent;
}

/**
 * Sends a tools/call that the client gives up on: the test aborts `client` when it wants the client
 * gone (from a fault point, synchronously, or after `until`); then, in 2025, `notifications/cancelled`
 * for its id is sent, as that era cancels. With `seen`, resolves once the server saw the exchange
 * close before its answer was written.
 */
async function callAndGoAway(
  harness: Harness,
  era: Era,
  name: string,
  args: Record<string, unknown>,
  options: { client: AbortController; until?: Promise<void>; seen: boolean },
): Promise<void> {
  const id = nextId++;
  const { client } = options;
  const sent = post(
    harness.url,
    era,
    { id, method: 'tools/call', params: { name, arguments: args } },
    client.signal,
  )
    .then(() => 'answered' as const)
    .catch(() => 'gone' as const);
  if (options.until !== undefined) {
    await Promise.race([options.until, sent]);
    client.abort();
  }
  expect(await sent).toBe('gone');
  if (era === REVISION_2025) {
    const cancelled = await post(harness.url, era, {
      method: 'notifications/cancelled',
      params: { requestId: id, reason: 'the client went away' },
    });
    expect(cancelled.status).toBe(202);
  }
  if (options.seen) await harness.closedEarly();
}

describe.each(BACKENDS)('a client that goes away while its call runs ($name)', (backend) => {
  describe.each(ERAS)('era %s', (era) => {
    it('the effect was under way: it committed, and a retry with a new JSON-RPC id replays it', async () => {
      const harness = await startHarness(backend.open);
      const client = new AbortController();
      // Inside the transaction, the effect written and its receipt not yet: the client goes now.
      harness.store.faults.arm('after_effect', () => client.abort());
      const args = { workspace: 'default', body: 'gone mid-effect', idempotency_key: `c-${randomUUID()}` };
      // PostgreSQL's transaction awaits its statements, so the server sees the close before COMMIT;
      // SQLite's runs synchronously, so the close reaches the server after it (and maybe after the
      // answer was written to the closed socket). Either way the client never had the answer.
      await callAndGoAway(harness, era, 'create_note', args, { client, seen: backend.name === 'postgres' });
      const retry = await callTool(harness.url, era, 'create_note', args);
      expect(retry).toMatchObject({ status: 'succeeded', replayed: true });
      expect(await harness.store.countNotes()).toBe(1);
      expect(await harness.calls(2)).toEqual(['executed', 'replayed']);
      expect((await harness.store.listNotes())[0]?.note_id).toBe(retry.note_id);
    });

    it('the call had not started its transaction: it left nothing, and a retry executes', async () => {
      const held = gate();
      const reached = gate();
      let first = true;
      const harness = await startHarness(backend.open, {
        // The test's own authorization step blocks the first call until the client has gone.
        authorize: async () => {
          if (!first) return true;
          first = false;
          reached.open();
          await held.promise;
          return true;
        },
      });
      const args = { workspace: 'default', body: 'gone before', idempotency_key: `n-${randomUUID()}` };
      const client = new AbortController();
      await callAndGoAway(harness, era, 'create_note', args, { client, until: reached.promise, seen: true });
      held.open();
      // The abandoned call ends as cancelled (`aborted`), without writing: no receipt, no note.
      expect(await harness.calls(1)).toEqual(['aborted']);
      expect(await harness.store.countReceipts()).toBe(0);
      expect(await harness.store.countNotes()).toBe(0);
      const retry = await callTool(harness.url, era, 'create_note', args);
      expect(retry).toMatchObject({ status: 'succeeded', replayed: false });
      expect(await harness.store.countNotes()).toBe(1);
      expect(await harness.calls(2)).toEqual(['aborted', 'executed']);
      const again = await callTool(harness.url, era, 'create_note', args);
      expect(again).toMatchObject({ replayed: true, note_id: retry.note_id });
    });

    it('an accepted durable operation is not cancelled by a closed stream, nor by a retry whose stream closed while it waited', async () => {
      // A retry of an unfinished durable operation waits (bounded) for it: long enough here that
      // the client closes the stream during the wait.
      const harness = await startHarness(backend.open, { inFlightWaitMs: 60_000 });
      const client = new AbortController();
      harness.store.faults.arm('after_commit', () => client.abort());
      const args = { workspace: 'default', service: 'api', idempotency_key: `d-${randomUUID()}` };
      await callAndGoAway(harness, era, 'start_deployment', args, { client, seen: false });
      const waiting = new AbortController();
      const waited = post(
        harness.url,
        era,
        { id: nextId++, method: 'tools/call', params: { name: 'start_deployment', arguments: args } },
        waiting.signal,
      ).catch(() => 'gone' as const);
      // The waiting retry's stream closes; the server sees it.
      const seen = harness.closedEarly();
      setTimeout(() => waiting.abort(), 300);
      expect(await waited).toBe('gone');
      await seen;
      const ledger = harness.store.store.ledger;
      const rows = await harness.store.countReceipts();
      expect(rows).toBe(1);
      // A third call (no bounded wait) finds it unfinished, still accepted: nothing cancelled it.
      const fast = await startHarness(async () => harness.store, { inFlightWaitMs: 0, sharesStore: true });
      const retry = await callTool(fast.url, era, 'start_deployment', args);
      // An unfinished durable operation is reported as running, with its handle.
      expect(retry).toMatchObject({ status: 'running', error: { code: 'in_progress' } });
      expect(typeof retry.operation_id).toBe('string');
      expect((await ledger.get(String(retry.operation_id)))?.status).toBe('accepted');
    });
  });
});

describe.each(BACKENDS)('a call re-issued while the first still runs ($name)', (backend) => {
  it.each(ERAS)(
    'era %s: new JSON-RPC id, same key: a bounded wait, one effect, the same note',
    async (era) => {
      const inEffect = gate();
      const release = gate();
      const postgres = backend.name === 'postgres';
      const harness = await startHarness(backend.open, {
        inFlightWaitMs: 300,
        // PostgreSQL: the first call's effect waits, inside its transaction, until released.
        ...(postgres
          ? {
              afterInsert: async () => {
                inEffect.open();
                await release.promise;
              },
            }
          : {}),
      });
      // SQLite's effect runs synchronously: the first call is held instead by another connection
      // that has the write lock, until released (within the store's lock timeout).
      const locker = postgres ? undefined : openTestStore({ path: harness.store.path });
      locker?.db.exec('BEGIN IMMEDIATE');
      const args = { workspace: 'default', body: 'in flight', idempotency_key: `f-${randomUUID()}` };
      const first = callTool(harness.url, era, 'create_note', args);
      if (postgres) {
        await inEffect.promise;
        // The re-issued call waits its bound for the first, then for the identity's lock, and answers
        // busy (retryable; nothing done by it): the first still holds the key, uncommitted.
        const second = await callTool(harness.url, era, 'create_note', args).finally(() => release.open());
        expect(second).toMatchObject({ status: 'rejected', error: { code: 'busy', retryable: true } });
        const done = await first;
        expect(done).toMatchObject({ status: 'succeeded', replayed: false });
        const third = await callTool(harness.url, era, 'create_note', args);
        expect(third).toMatchObject({ replayed: true, note_id: done.note_id });
      } else {
        const second = callTool(harness.url, era, 'create_note', args);
        // Both calls are queued behind the lock (the second past its bounded wait); then released.
        await new Promise((resolve) => setTimeout(resolve, 600));
        (locker as SqliteTestStore).db.exec('ROLLBACK');
        const answers = await Promise.all([first, second]);
        expect(answers.map((answer) => answer.replayed).sort()).toEqual([false, true]);
        expect(answers[0]?.note_id).toBe(answers[1]?.note_id);
      }
      await locker?.close();
      expect(await harness.store.countNotes()).toBe(1);
    },
  );
});
