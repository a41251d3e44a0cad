import { FaultPoints } from '../../packages/idem/src/core/fault-points.js';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqlite, type SqliteStore } from '../../packages/idem/src/adapters/sqlite/index.js';
import { systemClock } from '../../packages/idem/src/core/clock.js';
import type { RetryPolicy } from '../../packages/idem/src/core/retry-policy.js';
import { newAttemptId } from '../../packages/idem/src/core/ids.js';
import { Worker, type RecoveryMode } from '../../packages/idem/src/operations/index.js';
import { deploymentHandler } from '../../packages/idem-cli/src/server/deployment-handler.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import {
  accept,
  creates,
  eventually,
  LEASE_MS,
  listDeployments,
  memoryLogger,
  OPERATION,
  openProvider,
  openStore,
  recordRequests,
  tempDir,
  TEST_POLICY,
} from './operations-fixtures.js';
import { requestCancel, startAttempt } from '../../packages/idem/src/operations/ledger-transitions.js';

const args = { service: 'billing', version: '2.0.0' };

/** Two processes' worth of workers: two connections to one database file, one provider. */
async function twoWorkers(
  mode: RecoveryMode,
  clock: FakeClock | typeof systemClock,
  policy: RetryPolicy = TEST_POLICY,
) {
  const dir = tempDir();
  const dbPath = join(dir, 'idem.sqlite');
  const provider = await openProvider(mode, dir);
  const handler = deploymentHandler({
    baseUrl: provider.url,
    mode,
  });
  const make = (name: string, store: SqliteStore, faults: FaultPoints) =>
    new Worker({
      store,
      faults,
      handlers: { [OPERATION]: handler },
      clock,
      logger: memoryLogger(),
      workerId: name,
      policy,
      leaseMs: LEASE_MS,
      pollIntervalMs: 5,
      random: () => 0,
    });
  const storeA = openStore(dbPath, clock);
  const storeB = openStore(dbPath, clock);
  // The fault points of each store's worker.
  const faultsA = new FaultPoints();
  const faultsB = new FaultPoints();
  const a = make('worker-a', storeA, faultsA);
  const b = make('worker-b', storeB, faultsB);
  return { dir, dbPath, provider, storeA, storeB, faultsA, faultsB, a, b };
}

/** The Idempotency-Key the provider stored with each deployment (read from its own database). */
function providerKeys(dir: string): Array<string | null> {
  const db = openSqlite(join(dir, 'provider.sqlite'), { readonly: true });
  try {
    const rows = db.prepare('SELECT idempotency_key FROM deployments ORDER BY rowid').all();
    return (rows as Array<{ idempotency_key: string | null }>).map((row) => row.idempotency_key);
  } finally {
    db.close();
  }
}

describe('two workers on two connections to one database', () => {
  it(
    'never process the same operation at once: 20 operations, one attempt and one deployment each',
    { timeout: 60_000 },
    async () => {
      // Real time and real HTTP: an attempt bound that CI load cannot reach (in mode none a timed-out
      // request would be outcome_unknown, which is right, but not what this test is about).
      const t = await twoWorkers('none', systemClock, { ...TEST_POLICY, attemptTimeoutMs: 10_000 });
      const ops = [];
      for (let i = 0; i < 20; i += 1)
        ops.push(await accept(t.storeA, systemClock, { service: `svc-${i}`, version: '1' }));
      t.a.start();
      t.b.start();
      try {
        await eventually(
          async () => (await t.storeA.ledger.list({ status: 'succeeded' })).length === 20,
          30_000,
        );
      } finally {
        await Promise.all([t.a.stop(), t.b.stop()]);
      }
      // Mode none creates a deployment per request: any double processing would show as a 21st.
      const deployments = await listDeployments(t.provider.url);
      expect(deployments).toHaveLength(20);
      const byWorker = new Map<string, number>();
      for (const op of ops) {
        const done = await t.storeB.ledger.get(op.operationId);
        expect(done).toMatchObject({ status: 'succeeded', attemptCount: 1 });
        const attempts = await t.storeB.ledger.attempts(op.operationId);
        expect(attempts).toHaveLength(1);
        const workerId = attempts[0]?.workerId ?? '';
        byWorker.set(workerId, (byWorker.get(workerId) ?? 0) + 1);
      }
      expect(new Set(deployments.map((d) => d.service)).size).toBe(20);
      expect([...byWorker.keys()].every((id) => id === 'worker-a' || id === 'worker-b')).toBe(true);
    },
  );
});

describe('lease takeover after a crash', () => {
  it('mode key: crashed after the provider replied; B continues with the SAME key, one deployment', async () => {
    const clock = new FakeClock();
    const t = await twoWorkers('key', clock);
    const sent = recordRequests();
    const op = await accept(t.storeA, clock, args);
    t.faultsA.arm('after_provider_reply', () => {
      throw new Error('crash after the provider replied');
    });

    await expect(t.a.runOnce()).rejects.toThrow('crash after the provider replied');
    expect(await t.storeB.ledger.get(op.operationId)).toMatchObject({
      status: 'running',
      dispatched: true,
      leaseOwner: 'worker-a',
    });
    expect(await t.b.runOnce()).toBe(false); // A's lease still runs
    clock.advance(LEASE_MS);
    expect(await t.b.runOnce()).toBe(true);

    const deployments = await listDeployments(t.provider.url);
    expect(deployments).toHaveLength(1);
    const done = await t.storeB.ledger.get(op.operationId);
    expect(done).toMatchObject({
      status: 'succeeded',
      resourceId: deployments[0]?.deployment_id,
      attemptCount: 2,
    });
    const key = `idem-${op.operationId}`;
    expect(creates(sent).map((r) => r.idempotencyKey)).toEqual([key, key]);
    expect(providerKeys(t.dir)).toEqual([key]);
    const attempts = await t.storeB.ledger.attempts(op.operationId);
    expect(attempts.map((a) => [a.workerId, a.outcome, a.detail])).toEqual([
      // A "crashed" before finishing its attempt: B closed it when it claimed the operation.
      ['worker-a', 'interrupted', 'interrupted: no outcome recorded; closed when worker-b claimed'],
      ['worker-b', 'succeeded', 'created (replayed)'],
    ]);
  });

  it('a worker that dies between the final record and closing its attempt leaves no attempt open', async () => {
    const clock = new FakeClock();
    const t = await twoWorkers('key', clock);
    const op = await accept(t.storeA, clock, args);
    // A's finishAttempt never arrives: the process "died" right after committing the success.
    const dying = new Proxy(t.storeA.ledger, {
      get: (target, name) => {
        if (name === 'finishAttempt')
          return async () => Promise.reject(new Error('died before finishAttempt'));
        const value: unknown = Reflect.get(target, name, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const a = new Worker({
      store: { ledger: dying },
      handlers: {
        [OPERATION]: deploymentHandler({
          baseUrl: t.provider.url,
          mode: 'key',
        }),
      },
      clock,
      logger: memoryLogger(),
      workerId: 'worker-a',
      policy: TEST_POLICY,
      leaseMs: LEASE_MS,
    });
    await expect(a.runOnce()).rejects.toThrow('died before finishAttempt');
    const done = await t.storeB.ledger.get(op.operationId);
    expect(done).toMatchObject({ status: 'succeeded', attemptCount: 1 });
    // Final: no worker will claim it again, so the final write itself closed the attempt.
    expect(await t.b.runOnce()).toBe(false);
    expect(await t.storeB.ledger.attempts(op.operationId)).toEqual([
      expect.objectContaining({ workerId: 'worker-a', endedAt: clock.now(), outcome: 'succeeded' }),
    ]);
  });

  it('mode key: crashed before dispatch (fault before_dispatch); B sends once with the same key', async () => {
    const clock = new FakeClock();
    const t = await twoWorkers('key', clock);
    const sent = recordRequests();
    const op = await accept(t.storeA, clock, args);
    t.faultsA.arm('before_dispatch', () => {
      throw new Error('crash before dispatch');
    });
    await expect(t.a.runOnce()).rejects.toThrow('crash before dispatch');
    expect(await t.storeA.ledger.get(op.operationId)).toMatchObject({
      status: 'running',
      dispatched: true,
    });
    clock.advance(LEASE_MS);
    expect(await t.b.runOnce()).toBe(true);
    expect((await t.storeB.ledger.get(op.operationId))?.status).toBe('succeeded');
    expect(creates(sent).map((r) => r.idempotencyKey)).toEqual([`idem-${op.operationId}`]);
    expect(await listDeployments(t.provider.url)).toHaveLength(1);
  });

  it('mode reference: B reconciles the crashed attempt and finds the deployment, no second request', async () => {
    const clock = new FakeClock();
    const t = await twoWorkers('reference', clock);
    const sent = recordRequests();
    const op = await accept(t.storeA, clock, args);
    t.faultsA.arm('after_provider_reply', () => {
      throw new Error('crash');
    });
    await expect(t.a.runOnce()).rejects.toThrow('crash');
    clock.advance(LEASE_MS);
    expect(await t.b.runOnce()).toBe(true);
    const deployments = await listDeployments(t.provider.url);
    expect(deployments).toHaveLength(1);
    expect(await t.storeB.ledger.get(op.operationId)).toMatchObject({
      status: 'succeeded',
      resourceId: deployments[0]?.deployment_id,
      attemptCount: 1,
    });
    expect(creates(sent)).toHaveLength(1);
  });

  it('mode reference: nothing found and a cancel was requested: cancelled', async () => {
    const clock = new FakeClock();
    const t = await twoWorkers('reference', clock);
    const op = await accept(t.storeA, clock, args);
    // A worker that claimed and recorded an attempt, then vanished before sending anything.
    await t.storeA.ledger.claim({ workerId: 'ghost', now: clock.now(), leaseMs: LEASE_MS });
    const started = await startAttempt(t.storeA.ledger, op.operationId, {
      workerId: 'ghost',
      attemptId: newAttemptId(clock.now()),
      now: clock.now(),
      from: ['accepted'],
    });
    expect(started).toMatchObject({ status: 'running', dispatched: true, attemptCount: 1 });
    await requestCancel(t.storeA.ledger, op.operationId, clock.now());
    clock.advance(LEASE_MS);
    expect(await t.b.runOnce()).toBe(true);
    expect(await t.storeB.ledger.get(op.operationId)).toMatchObject({
      status: 'cancelled',
      dispatched: false,
    });
    expect(await listDeployments(t.provider.url)).toHaveLength(0);
  });

  it('mode reference: nothing found, no cancel: dispatched again once', async () => {
    const clock = new FakeClock();
    const t = await twoWorkers('reference', clock);
    const op = await accept(t.storeA, clock, args);
    t.faultsA.arm('before_dispatch', () => {
      throw new Error('crash');
    });
    await expect(t.a.runOnce()).rejects.toThrow('crash');
    clock.advance(LEASE_MS);
    expect(await t.b.runOnce()).toBe(true);
    expect(await t.storeB.ledger.get(op.operationId)).toMatchObject({
      status: 'succeeded',
      attemptCount: 2,
    });
    expect(await listDeployments(t.provider.url)).toHaveLength(1);
  });

  it('mode none: B cannot tell, so outcome_unknown', async () => {
    const clock = new FakeClock();
    const t = await twoWorkers('none', clock);
    const op = await accept(t.storeA, clock, args);
    t.faultsA.arm('after_provider_reply', () => {
      throw new Error('crash');
    });
    await expect(t.a.runOnce()).rejects.toThrow('crash');
    clock.advance(LEASE_MS);
    expect(await t.b.runOnce()).toBe(true);
    const done = await t.storeB.ledger.get(op.operationId);
    expect(done).toMatchObject({ status: 'outcome_unknown', error: { code: 'outcome_unknown' } });
    expect(done?.error?.nextAction).toContain('"billing"');
    expect(await listDeployments(t.provider.url)).toHaveLength(1);
  });

  it('a worker that loses its lease mid-attempt stops; the next owner finishes with the same key', async () => {
    const clock = new FakeClock();
    const t = await twoWorkers('key', clock);
    const op = await accept(t.storeA, clock, args);
    // A's store reports the renewal refused, as when another worker has taken the lease.
    const refusing = new Proxy(t.storeA.ledger, {
      get: (target, name) => {
        if (name === 'renew') return async () => false;
        const value: unknown = Reflect.get(target, name, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const logger = memoryLogger();
    const a = new Worker({
      store: { ledger: refusing },
      handlers: {
        [OPERATION]: deploymentHandler({
          baseUrl: t.provider.url,
          mode: 'key',
        }),
      },
      clock,
      logger,
      workerId: 'worker-a',
      policy: { ...TEST_POLICY, attemptTimeoutMs: 10_000 },
      leaseMs: LEASE_MS,
    });
    t.provider.faults.arm({ kind: 'delay', route: 'create', delayMs: 5_000 });
    const running = a.runOnce();
    await eventually(async () => (await listDeployments(t.provider.url)).length === 1);
    clock.advance(Math.floor(LEASE_MS / 3)); // the renewal tick
    const started = Date.now();
    expect(await running).toBe(true);
    expect(Date.now() - started).toBeLessThan(2_000); // aborted, not waited out
    expect(logger.events('op.lease_lost')).toHaveLength(1);
    const [attempt] = await t.storeB.ledger.attempts(op.operationId);
    expect(attempt).toMatchObject({ outcome: 'lease_lost', detail: 'ambiguous: aborted' });
    expect(await t.storeB.ledger.get(op.operationId)).toMatchObject({
      status: 'running',
      dispatched: true,
    });

    clock.advance(LEASE_MS);
    expect(await t.b.runOnce()).toBe(true);
    expect((await t.storeB.ledger.get(op.operationId))?.status).toBe('succeeded');
    expect(await listDeployments(t.provider.url)).toHaveLength(1);
  });
});
