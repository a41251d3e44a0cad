import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { creates, harness, recordRequests, TEST_POLICY } from './operations-fixtures.js';

const args = { service: 'billing', version: '1.4.2' };

describe('Worker: happy path in every provider mode', () => {
  for (const mode of ['key', 'reference', 'none'] as const) {
    it(`mode ${mode}: one deployment, succeeded, resource = deployment`, async () => {
      const h = await harness(mode, new FakeClock());
      const sent = recordRequests();
      const op = await h.accept(args);
      const worker = h.worker();

      expect(await worker.runOnce()).toBe(true);
      const done = await h.get(op.operationId);
      const deployments = await h.deployments();
      expect(deployments).toHaveLength(1);
      const deploymentId = deployments[0]?.deployment_id;
      expect(done).toMatchObject({
        status: 'succeeded',
        resourceId: deploymentId,
        dispatched: false,
        attemptCount: 1,
        result: {
          status: 'succeeded',
          operation_id: op.operationId,
          resource_id: deploymentId,
          deployment_id: deploymentId,
          service: 'billing',
          version: '1.4.2',
        },
      });
      expect(done.leaseOwner).toBeUndefined();
      expect(done.expiresAt).toBe(h.clock.now() + 24 * 60 * 60 * 1000);
      const [attempt, ...more] = await h.store.ledger.attempts(op.operationId);
      expect(more).toEqual([]);
      expect(attempt).toMatchObject({ number: 1, workerId: worker.workerId, outcome: 'succeeded' });

      // The provider key travels as the mode prescribes, and only then.
      const [post] = creates(sent);
      const key = `idem-${op.operationId}`;
      expect(post?.idempotencyKey).toBe(mode === 'key' ? key : undefined);
      expect(JSON.parse(post?.body ?? '{}')).toEqual(
        mode === 'reference' ? { ...args, client_reference: key } : args,
      );
      if (mode === 'reference') expect(deployments[0]?.client_reference).toBe(key);

      expect(await worker.runOnce()).toBe(false);
    });
  }
});

describe('Worker: a lost reply (drop_response)', () => {
  it('mode key: retried with the same key, exactly one deployment, succeeded', async () => {
    const h = await harness('key', new FakeClock());
    const sent = recordRequests();
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'drop_response', route: 'create' });
    const worker = h.worker();

    expect(await worker.runOnce()).toBe(true);
    expect(await h.get(op.operationId)).toMatchObject({
      status: 'running',
      dispatched: true,
      attemptCount: 1,
    });
    expect(await worker.runOnce()).toBe(true);

    const done = await h.get(op.operationId);
    const deployments = await h.deployments();
    expect(deployments).toHaveLength(1);
    expect(done).toMatchObject({
      status: 'succeeded',
      resourceId: deployments[0]?.deployment_id,
      attemptCount: 2,
    });
    const keys = creates(sent).map((request) => request.idempotencyKey);
    expect(keys).toEqual([`idem-${op.operationId}`, `idem-${op.operationId}`]);
    const attempts = await h.store.ledger.attempts(op.operationId);
    expect(attempts.map((a) => [a.outcome, a.detail])).toEqual([
      ['ambiguous', 'ambiguous: connection_closed'],
      ['succeeded', 'created (replayed)'],
    ]);
  });

  it('mode reference: reconciled at once, one deployment, succeeded', async () => {
    const h = await harness('reference', new FakeClock());
    const sent = recordRequests();
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'drop_response', route: 'create' });

    expect(await h.worker().runOnce()).toBe(true);
    const deployments = await h.deployments();
    expect(deployments).toHaveLength(1);
    expect(await h.get(op.operationId)).toMatchObject({
      status: 'succeeded',
      resourceId: deployments[0]?.deployment_id,
      attemptCount: 1,
      dispatched: false,
    });
    expect(creates(sent)).toHaveLength(1);
    expect(sent.filter((r) => r.url.includes('client_reference='))).toHaveLength(1);
    expect(h.logger.events('op.reconciled')).toEqual([expect.objectContaining({ outcome: 'created' })]);
  });

  it('mode none: outcome_unknown with what to check, one deployment, never re-sent', async () => {
    const h = await harness('none', new FakeClock());
    const sent = recordRequests();
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'drop_response', route: 'create' });
    const worker = h.worker();

    expect(await worker.runOnce()).toBe(true);
    const unknown = await h.get(op.operationId);
    expect(unknown).toMatchObject({ status: 'outcome_unknown', dispatched: true, attemptCount: 1 });
    expect(unknown.error?.code).toBe('outcome_unknown');
    expect(unknown.expiresAt).toBeUndefined();
    const next = unknown.error?.nextAction ?? '';
    for (const part of [
      '"billing"',
      '"1.4.2"',
      `idem-${op.operationId}`,
      new Date(op.createdAt).toISOString(),
    ])
      expect(next).toContain(part);
    expect(await h.deployments()).toHaveLength(1);
    expect(await worker.runOnce()).toBe(false);
    expect(creates(sent)).toHaveLength(1);
  });

  it('mode key: the same loss on every attempt ends outcome_unknown, still one deployment', async () => {
    const h = await harness('key', new FakeClock());
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'drop_response', route: 'create', times: 5 });
    const worker = h.worker({ policy: { ...TEST_POLICY, maxAttempts: 2 } });
    expect(await worker.runOnce()).toBe(true);
    expect(await worker.runOnce()).toBe(true);
    const done = await h.get(op.operationId);
    expect(done).toMatchObject({ status: 'outcome_unknown', dispatched: true, attemptCount: 2 });
    expect(done.error?.message).toContain('attempts_exhausted');
    expect(done.error?.nextAction).toContain(`Idempotency-Key idem-${op.operationId}`);
    expect(await h.deployments()).toHaveLength(1);
  });

  it('mode key: a request that times out is ambiguous and retried with the same key', async () => {
    const h = await harness('key', new FakeClock());
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'delay', route: 'create', delayMs: 1_000 });
    const worker = h.worker();
    expect(await worker.runOnce()).toBe(true);
    const [first] = await h.store.ledger.attempts(op.operationId);
    expect(first).toMatchObject({ outcome: 'ambiguous', detail: 'ambiguous: timeout' });
    expect(await worker.runOnce()).toBe(true);
    expect((await h.get(op.operationId)).status).toBe('succeeded');
    expect(await h.deployments()).toHaveLength(1);
  });
});
