import { describe, expect, it } from 'vitest';
import { startProvider } from '../../packages/idem-cli/src/provider/index.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { postgresAvailable } from '../helpers/postgres-fixtures.js';
import {
  creates,
  eventually,
  harness,
  recordRequests,
  TEST_POLICY,
  type Engine,
  type Harness,
} from './operations-fixtures.js';
import { requestCancel } from '../../packages/idem/src/operations/ledger-transitions.js';

const args = { service: 'billing', version: '1.4.2' };

/** Runs the worker until nothing is due, advancing the fake clock past each backoff; returns the runs. */
async function drain(h: Harness, clock: FakeClock, worker = h.worker(), limit = 20): Promise<number> {
  let runs = 0;
  while (runs < limit) {
    if (await worker.runOnce()) runs += 1;
    else {
      const op = (await h.store.ledger.list({ limit: 10 }))[0];
      if (op === undefined || !['accepted', 'running', 'cancel_requested'].includes(op.status)) return runs;
      clock.advance(TEST_POLICY.maxDelayMs);
    }
  }
  throw new Error(`the worker did not settle within ${limit} runs`);
}

const engines: Engine[] = postgresAvailable ? ['sqlite', 'postgres'] : ['sqlite'];

/**
 * Issue 13's four scenarios: an attempt that may have been applied (the provider committed, the
 * reply was lost) is followed by refusals, throttles or a cancel. None of them may erase that
 * ambiguity: the operation ends succeeded when a keyed resend replays, else outcome_unknown.
 */
describe.each(engines)('Worker: a later refusal never erases an earlier ambiguity (%s)', (engine) => {
  it('mode key: applied, reply lost, then 503s until the attempts run out: outcome_unknown, 1 deployment', async () => {
    const clock = new FakeClock();
    const h = await harness('key', clock, engine);
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'drop_response', route: 'create' });
    h.provider.faults.arm({ kind: 'status', status: 503, route: 'create', times: 10 });

    await drain(h, clock);
    const done = await h.get(op.operationId);
    expect(done).toMatchObject({ status: 'outcome_unknown', dispatched: true, attemptCount: 3 });
    expect(done.error?.message).toMatch(/attempts_exhausted.*throttled \(HTTP 503\)/);
    expect(done.error?.nextAction).toMatch(/Idempotency-Key idem-op_/);
    expect(await h.deployments()).toHaveLength(1);
  });

  it('mode key: applied, reply lost, one 503, then the keyed resend replays: succeeded, 1 deployment', async () => {
    const clock = new FakeClock();
    const h = await harness('key', clock, engine);
    const sent = recordRequests();
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'drop_response', route: 'create' });
    h.provider.faults.arm({ kind: 'status', status: 503, route: 'create' });

    await drain(h, clock);
    const done = await h.get(op.operationId);
    const [deployment] = await h.deployments();
    expect(done).toMatchObject({
      status: 'succeeded',
      attemptCount: 3,
      resourceId: deployment?.deployment_id,
    });
    expect(await h.deployments()).toHaveLength(1);
    expect(new Set(creates(sent).map((request) => request.idempotencyKey)).size).toBe(1);
  });

  it('mode key: applied, the provider dies before replying and stays down: outcome_unknown, 1 deployment', async () => {
    const clock = new FakeClock();
    const h = await harness('key', clock, engine);
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'drop_response', route: 'create' });
    const worker = h.worker();
    expect(await worker.runOnce()).toBe(true); // applied, no reply
    await h.provider.close(); // every later attempt: connection refused, until the deadline

    await drain(h, clock, worker);
    const done = await h.get(op.operationId);
    expect(done).toMatchObject({ status: 'outcome_unknown', dispatched: true });
    // Refusals sent nothing: they do not count against the cap of 3, the deadline ends them.
    expect(done.attemptCount).toBeGreaterThan(TEST_POLICY.maxAttempts);
    expect(done.error?.message).toMatch(/deadline_exhausted; last attempt: connection refused/);

    const back = await startProvider({ mode: 'key', port: 0, dbPath: `${h.dir}/provider.sqlite` });
    try {
      const list = (await (await fetch(`${back.url}/deployments`)).json()) as { deployments: unknown[] };
      expect(list.deployments).toHaveLength(1);
    } finally {
      await back.close();
    }
  });

  it('mode key: applied, reply lost, 503 with Retry-After, cancel during the wait: the resend replays, succeeded', async () => {
    const clock = new FakeClock();
    const h = await harness('key', clock, engine);
    const sent = recordRequests();
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'drop_response', route: 'create' });
    h.provider.faults.arm({ kind: 'status', status: 503, route: 'create', retryAfterSeconds: 3 });
    const worker = h.worker();
    expect(await worker.runOnce()).toBe(true); // applied, no reply
    expect(await worker.runOnce()).toBe(true); // 503, Retry-After 3 s
    expect(await h.get(op.operationId)).toMatchObject({ status: 'running', dispatched: true });
    expect((await requestCancel(h.store.ledger, op.operationId, clock.now()))?.status).toBe(
      'cancel_requested',
    );

    await drain(h, clock, worker);
    const done = await h.get(op.operationId);
    const [deployment] = await h.deployments();
    expect(done).toMatchObject({ status: 'succeeded', resourceId: deployment?.deployment_id });
    expect(await h.deployments()).toHaveLength(1);
    expect(creates(sent)).toHaveLength(3);
  });

  it('mode none: applied, reply lost, then 503s: outcome_unknown, 1 deployment', async () => {
    const clock = new FakeClock();
    const h = await harness('none', clock, engine);
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'drop_response', route: 'create' });
    h.provider.faults.arm({ kind: 'status', status: 503, route: 'create', times: 10 });

    await drain(h, clock);
    expect(await h.get(op.operationId)).toMatchObject({ status: 'outcome_unknown', dispatched: true });
    expect(await h.deployments()).toHaveLength(1);
  });

  it('mode key: applied, reply lost, then a 422: outcome_unknown (the refusal does not prove nothing was made)', async () => {
    const clock = new FakeClock();
    const h = await harness('key', clock, engine);
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'drop_response', route: 'create' });
    h.provider.faults.arm({ kind: 'status', status: 422, route: 'create' });

    await drain(h, clock);
    const done = await h.get(op.operationId);
    expect(done).toMatchObject({ status: 'outcome_unknown', dispatched: true, attemptCount: 2 });
    expect(done.error?.message).toMatch(/HTTP 422/);
    expect(await h.deployments()).toHaveLength(1);
  });

  it('mode reference: applied, the reply too late, cancel requested meanwhile: the lookup finds it, succeeded', async () => {
    const clock = new FakeClock();
    const h = await harness('reference', clock, engine);
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'delay', delayMs: 3 * TEST_POLICY.attemptTimeoutMs, route: 'create' });
    const started = h.worker().runOnce();
    await eventually(async () => (await h.deployments()).length === 1);
    expect((await requestCancel(h.store.ledger, op.operationId, clock.now()))?.status).toBe(
      'cancel_requested',
    );
    await started;

    await drain(h, clock);
    const [deployment] = await h.deployments();
    expect(await h.get(op.operationId)).toMatchObject({
      status: 'succeeded',
      resourceId: deployment?.deployment_id,
    });
    expect(await h.deployments()).toHaveLength(1);
  });

  it('mode reference: refused while nothing was applied, cancel requested: cancelled once nothing can land', async () => {
    const clock = new FakeClock();
    const h = await harness('reference', clock, engine);
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'status', status: 500, route: 'create' }); // ambiguous, not applied
    const worker = h.worker();
    expect(await worker.runOnce()).toBe(true);
    expect(await h.get(op.operationId)).toMatchObject({ status: 'running', dispatched: true });
    await requestCancel(h.store.ledger, op.operationId, clock.now());

    await drain(h, clock, worker);
    expect(await h.get(op.operationId)).toMatchObject({ status: 'cancelled', dispatched: false });
    expect(await h.deployments()).toHaveLength(0);
  });
});
