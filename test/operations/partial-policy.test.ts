import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DEFAULT_RETRY_POLICY } from '../../packages/idem/src/core/retry-policy.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { durableTool } from '../../packages/idem/src/mcp/idempotent-tool.js';
import {
  clientReferenceHandler,
  idempotencyKeyHandler,
  unkeyedHandler,
  Worker,
  type DurableHandler,
} from '../../packages/idem/src/operations/index.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { accept, LEASE_MS, memoryLogger, OPERATION, openStore, tempDir } from './operations-fixtures.js';

// Issue 38, point 6: every option that takes a retry policy takes any part of one, over the
// defaults, and refuses a field that cannot be a policy when the worker, handler or tool is made.

const http = { url: 'http://127.0.0.1:9/pay', body: () => ({}), result: () => undefined };
const quiet: DurableHandler = {
  mode: 'none',
  dispatch: () => Promise.resolve({ kind: 'ambiguous', reason: 'unused' }),
  reconcile: () => Promise.resolve({ kind: 'unsupported' }),
  nextAction: () => 'unused',
};

describe('a part of a RetryPolicy, over DEFAULT_RETRY_POLICY', () => {
  it('the ready handlers keep the given fields and the defaults for the rest', () => {
    const expected = { ...DEFAULT_RETRY_POLICY, totalMs: 60_000, maxAttempts: 5 };
    const policy = { totalMs: 60_000, maxAttempts: 5 };
    expect(idempotencyKeyHandler({ ...http, policy }).policy).toEqual(expected);
    expect(unkeyedHandler({ ...http, policy }).policy).toEqual(expected);
    expect(
      clientReferenceHandler({ ...http, policy, searchUrl: () => http.url, matches: () => [] }).policy,
    ).toEqual(expected);
    expect(idempotencyKeyHandler(http).policy).toBeUndefined(); // the worker's
  });

  it('a field that cannot be a policy is refused when the handler, worker or tool is made', () => {
    expect(() => idempotencyKeyHandler({ ...http, policy: { maxAttempts: 0 } })).toThrow(
      /^RetryPolicy\.maxAttempts must be an integer of at least 1$/,
    );
    const clock = new FakeClock();
    const store = openStore(join(tempDir(), 'idem.sqlite'), clock);
    expect(() => new Worker({ store, handlers: {}, policy: { totalMs: -1 } })).toThrow(
      /RetryPolicy\.totalMs must be a positive number/,
    );
    // A handler of your own: checked by the worker that runs it, before any operation comes.
    const own = { ...quiet, policy: { baseDelayMs: Number.NaN } };
    expect(() => new Worker({ store, handlers: { [OPERATION]: own } })).toThrow(/RetryPolicy\.baseDelayMs/);
    const executor = new Executor({ store, authorize: () => true });
    const tool = {
      name: 'deploy',
      version: 1,
      description: 'Deploys.',
      inputSchema: { service: z.string() },
    };
    expect(() => durableTool(executor, { ...tool, policy: { attemptTimeoutMs: 0 } })).toThrow(RangeError);
  });

  it("a durable tool's totalMs alone sets its operations' deadline; none: the default 30 s", async () => {
    const clock = new FakeClock();
    const store = openStore(join(tempDir(), 'idem.sqlite'), clock);
    const executor = new Executor({ store, authorize: () => true, clock, inFlightWaitMs: 0 });
    const tool = {
      name: 'deploy',
      version: 1,
      description: 'Deploys.',
      inputSchema: { service: z.string() },
    };
    const call = { workspace: 'w', service: 'api' };
    const short = durableTool(executor, { ...tool, policy: { totalMs: 10_000 } });
    const plain = durableTool(executor, { ...tool, name: 'deploy_plain' });
    const a = await short.handle({ ...call, idempotency_key: 'a' }, { principal: 'p' });
    const b = await plain.handle({ ...call, idempotency_key: 'b' }, { principal: 'p' });
    const deadline = async (id: unknown) => {
      const record = await store.ledger.get(String(id));
      return (record?.deadlineAt ?? 0) - (record?.createdAt ?? 0);
    };
    expect(await deadline(a.structuredContent.operation_id)).toBe(10_000);
    expect(await deadline(b.structuredContent.operation_id)).toBe(DEFAULT_RETRY_POLICY.totalMs);
  });
});

describe("a handler's own policy", () => {
  it('its attempt timeout bounds the window in which an abandoned request may still land', async () => {
    // Mode reference: an ambiguous attempt, then a lookup that finds nothing. Absence proves
    // nothing until the attempt's start + its timeout + landingMs (default: the timeout again),
    // with the timeout the attempt ran with: the handler's 5 s, not the worker's 300 ms.
    const clock = new FakeClock();
    const store = openStore(join(tempDir(), 'idem.sqlite'), clock);
    const logger = memoryLogger();
    const timeouts: number[] = [];
    const handler: DurableHandler = {
      ...quiet,
      mode: 'reference',
      policy: { attemptTimeoutMs: 5_000 },
      dispatch: (_op, context) => {
        timeouts.push(context.timeoutMs);
        return Promise.resolve({ kind: 'ambiguous', reason: 'timeout' });
      },
      reconcile: () => Promise.resolve({ kind: 'absent' }),
    };
    const worker = new Worker({
      store,
      handlers: { [OPERATION]: handler },
      clock,
      logger,
      policy: { attemptTimeoutMs: 300 },
      leaseMs: LEASE_MS,
      random: () => 0,
    });
    const op = await accept(store, clock, { service: 'billing', version: '1' });
    expect(await worker.runOnce()).toBe(true);
    expect(timeouts).toEqual([5_000]);
    expect(logger.events('op.retry_scheduled')).toEqual([
      expect.objectContaining({ operation_id: op.operationId, delay_ms: 10_000, dispatched: true }),
    ]);
    clock.advance(9_999);
    expect(await worker.runOnce()).toBe(false);
  });
});
