import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { MIN_ATTEMPT_MS } from '../../packages/idem/src/core/retry-policy.js';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import type { HandlerCallContext } from '../../packages/idem/src/operations/index.js';
import { creates, harness, OPERATION, recordRequests, TEST_POLICY } from './operations-fixtures.js';

const args = { service: 'billing', version: '1.4.2' };

describe('Worker: refusals', () => {
  it('503 then success: retried, one deployment', async () => {
    const h = await harness('none', new FakeClock());
    const sent = recordRequests();
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'status', status: 503, route: 'create' });
    const worker = h.worker();

    expect(await worker.runOnce()).toBe(true);
    expect(await h.get(op.operationId)).toMatchObject({
      status: 'running',
      dispatched: false,
      attemptCount: 1,
    });
    expect(await worker.runOnce()).toBe(true);
    expect(await h.get(op.operationId)).toMatchObject({ status: 'succeeded', attemptCount: 2 });
    expect(await h.deployments()).toHaveLength(1);
    expect(creates(sent)).toHaveLength(2);
    expect(h.logger.events('op.retry_scheduled')).toEqual([
      expect.objectContaining({ operation_id: op.operationId, delay_ms: 0, dispatched: false }),
    ]);
  });

  it('a backoff is respected: not due before nextAttemptAt', async () => {
    const clock = new FakeClock();
    const h = await harness('none', clock);
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'status', status: 503, route: 'create' });
    const worker = h.worker({ random: () => 0.5 }); // first backoff: 0.5 * 200 ms
    expect(await worker.runOnce()).toBe(true);
    expect(await worker.runOnce()).toBe(false);
    clock.advance(99);
    expect(await worker.runOnce()).toBe(false);
    clock.advance(1);
    expect(await worker.runOnce()).toBe(true);
    expect((await h.get(op.operationId)).status).toBe('succeeded');
  });

  it('429 with a Retry-After beyond the budget: failed at once, without waiting', async () => {
    const h = await harness('key', new FakeClock());
    const sent = recordRequests();
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'status', status: 429, route: 'create', retryAfterSeconds: 60 });
    const started = Date.now();
    expect(await h.worker().runOnce()).toBe(true);
    expect(Date.now() - started).toBeLessThan(2_000);
    const done = await h.get(op.operationId);
    expect(done).toMatchObject({ status: 'failed', dispatched: false, error: { code: 'internal' } });
    expect(done.error?.message).toMatch(
      /^retry_after_beyond_deadline.* after 1 attempt: throttled \(HTTP 429\)/,
    );
    expect(creates(sent)).toHaveLength(1);
    expect(await h.deployments()).toHaveLength(0);
  });

  it('429 with a Retry-After that fits: honoured as the backoff', async () => {
    const clock = new FakeClock();
    const h = await harness('key', clock);
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'status', status: 429, route: 'create', retryAfterSeconds: 2 });
    const worker = h.worker();
    expect(await worker.runOnce()).toBe(true);
    clock.advance(1_999);
    expect(await worker.runOnce()).toBe(false);
    clock.advance(1);
    expect(await worker.runOnce()).toBe(true);
    expect((await h.get(op.operationId)).status).toBe('succeeded');
  });

  for (const [service, status, code] of [
    ['forbidden-payments', 403, 'forbidden'],
    ['invalid-thing', 422, 'invalid_argument'],
  ] as const) {
    it(`${status}: failed ${code} after exactly one provider request`, async () => {
      const h = await harness('key', new FakeClock());
      const sent = recordRequests();
      const op = await h.accept({ service, version: '1' });
      const worker = h.worker();
      expect(await worker.runOnce()).toBe(true);
      expect(await worker.runOnce()).toBe(false);
      const done = await h.get(op.operationId);
      expect(done).toMatchObject({ status: 'failed', dispatched: false, attemptCount: 1, error: { code } });
      expect(done.error?.message).toContain(`HTTP ${status}`);
      expect(creates(sent)).toHaveLength(1);
      expect(await h.deployments()).toHaveLength(0);
    });
  }

  it('an idempotency_key_conflict is a definite rejection', async () => {
    const h = await harness('key', new FakeClock());
    const op = await h.accept(args);
    // Someone else used this operation's provider key for another request first.
    await fetch(`${h.provider.url}/deployments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': `idem-${op.operationId}` },
      body: JSON.stringify({ service: 'other', version: '9' }),
    });
    expect(await h.worker().runOnce()).toBe(true);
    const done = await h.get(op.operationId);
    expect(done).toMatchObject({ status: 'failed', error: { code: 'invalid_argument' } });
    expect(done.error?.message).toContain('idempotency_key_conflict');
  });

  it('attempts exhausted by 503s: failed with the reason, nothing deployed', async () => {
    const h = await harness('none', new FakeClock());
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'status', status: 503, route: 'create', times: 10 });
    const worker = h.worker();
    while (await worker.runOnce());
    const done = await h.get(op.operationId);
    expect(done).toMatchObject({ status: 'failed', attemptCount: 3, error: { code: 'internal' } });
    expect(done.error?.message).toBe('attempts exhausted after 3 attempts: throttled (HTTP 503)');
    expect(await h.deployments()).toHaveLength(0);
  });
});

describe('Worker: deadlines', () => {
  it('a deadline that passed during backoff: failed with the last reason', async () => {
    const clock = new FakeClock();
    const h = await harness('none', clock);
    const op = await h.accept(args, { deadlineMs: 1_000 });
    h.provider.faults.arm({ kind: 'status', status: 503, route: 'create' });
    const worker = h.worker();
    expect(await worker.runOnce()).toBe(true);
    clock.advance(1_000);
    expect(await worker.runOnce()).toBe(true);
    const done = await h.get(op.operationId);
    expect(done).toMatchObject({ status: 'failed', attemptCount: 1, error: { code: 'internal' } });
    expect(done.error?.message).toBe('deadline exhausted after 1 attempt: throttled (HTTP 503)');
    expect(await h.deployments()).toHaveLength(0);
  });

  it('an operation that waited past its deadline is failed without a request', async () => {
    const clock = new FakeClock();
    const h = await harness('key', clock);
    const sent = recordRequests();
    const op = await h.accept(args, { deadlineMs: 1_000 });
    clock.advance(5_000);
    expect(await h.worker().runOnce()).toBe(true);
    const done = await h.get(op.operationId);
    expect(done.error?.message).toBe('deadline exhausted after 0 attempts: never attempted');
    expect(creates(sent)).toHaveLength(0);
  });

  it('mode key, dispatched and past the deadline: outcome_unknown, not re-sent', async () => {
    const clock = new FakeClock();
    const h = await harness('key', clock);
    const sent = recordRequests();
    const op = await h.accept(args, { deadlineMs: 1_000 });
    h.provider.faults.arm({ kind: 'drop_response', route: 'create' });
    const worker = h.worker();
    expect(await worker.runOnce()).toBe(true);
    clock.advance(1_000);
    expect(await worker.runOnce()).toBe(true);
    const done = await h.get(op.operationId);
    expect(done).toMatchObject({ status: 'outcome_unknown', dispatched: true });
    expect(done.error?.message).toContain('deadline_exhausted');
    expect(creates(sent)).toHaveLength(1);
  });

  it('the attempt timeout is capped by what is left of the deadline', async () => {
    const clock = new FakeClock();
    const h = await harness('key', clock);
    const op = await h.accept(args, { deadlineMs: 10_000 });
    clock.advance(9_850); // 150 ms left: far less than a 5 s attempt timeout, more than MIN_ATTEMPT_MS
    h.provider.faults.arm({ kind: 'delay', route: 'create', delayMs: 8_000 });
    const started = Date.now();
    expect(await h.worker({ policy: { ...TEST_POLICY, attemptTimeoutMs: 5_000 } }).runOnce()).toBe(true);
    // The 5 s attempt timeout would have waited 5 s; wide margins, so that CI load cannot decide it.
    expect(Date.now() - started).toBeLessThan(3_000);
    const [attempt] = await h.store.ledger.attempts(op.operationId);
    expect(attempt?.detail).toBe('ambiguous: timeout');
  });

  it('picked up late with less than MIN_ATTEMPT_MS left: attempted all the same, with MIN_ATTEMPT_MS', async () => {
    const clock = new FakeClock();
    const h = await harness('key', clock);
    const sent = recordRequests();
    const op = await h.accept(args, { deadlineMs: 10_000 });
    clock.advance(10_000 - MIN_ATTEMPT_MS + 1);
    const timeouts: number[] = [];
    const dispatch = h.handler.dispatch.bind(h.handler);
    const watched = {
      ...h.handler,
      dispatch: (operation: OperationRecord, context: HandlerCallContext) => {
        timeouts.push(context.timeoutMs);
        return dispatch(operation, context);
      },
    };
    expect(await h.worker({ handlers: { [OPERATION]: watched } }).runOnce()).toBe(true);
    expect(await h.get(op.operationId)).toMatchObject({ status: 'succeeded', attemptCount: 1 });
    expect(timeouts).toEqual([MIN_ATTEMPT_MS]);
    expect(creates(sent)).toHaveLength(1);
  });

  it('picked up at its deadline: no attempt, failed, nothing sent', async () => {
    const clock = new FakeClock();
    const h = await harness('key', clock);
    const sent = recordRequests();
    const op = await h.accept(args, { deadlineMs: 10_000 });
    clock.advance(10_000);
    expect(await h.worker().runOnce()).toBe(true);
    const done = await h.get(op.operationId);
    expect(done).toMatchObject({ status: 'failed', dispatched: false });
    expect(done.error?.message).toMatch(/^deadline exhausted after 0 attempts/);
    expect(creates(sent)).toHaveLength(0);
    expect(await h.store.ledger.attempts(op.operationId)).toEqual([]);
  });
});
