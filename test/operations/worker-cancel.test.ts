import { describe, expect, it } from 'vitest';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { creates, eventually, harness, recordRequests, TEST_POLICY } from './operations-fixtures.js';
import { requestCancel } from '../../packages/idem/src/operations/ledger-transitions.js';

const args = { service: 'billing', version: '1.4.2' };

describe('Worker: cancellation', () => {
  it('cancel before dispatch: cancelled, zero deployments, no request', async () => {
    const h = await harness('none', new FakeClock());
    const sent = recordRequests();
    const op = await h.accept(args);
    expect((await requestCancel(h.store.ledger, op.operationId, h.clock.now()))?.status).toBe(
      'cancel_requested',
    );
    expect(await h.worker().runOnce()).toBe(true);
    const done = await h.get(op.operationId);
    expect(done).toMatchObject({ status: 'cancelled', attemptCount: 0, dispatched: false });
    expect(done.expiresAt).toBeDefined();
    expect(creates(sent)).toHaveLength(0);
    expect(await h.deployments()).toHaveLength(0);
  });

  it('cancel racing a success: success wins', async () => {
    const h = await harness('key', new FakeClock());
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'delay', route: 'create', delayMs: 300 });
    const worker = h.worker({ policy: { ...TEST_POLICY, attemptTimeoutMs: 5_000 } });
    const running = worker.runOnce();
    await eventually(async () => (await h.deployments()).length === 1);
    expect((await requestCancel(h.store.ledger, op.operationId, h.clock.now()))?.status).toBe(
      'cancel_requested',
    );
    expect(await running).toBe(true);
    const done = await h.get(op.operationId);
    expect(done).toMatchObject({
      status: 'succeeded',
      resourceId: (await h.deployments())[0]?.deployment_id,
    });
  });

  it('mode key: cancel after an ambiguous attempt resends with the same key to learn the truth: succeeded', async () => {
    const h = await harness('key', new FakeClock());
    const sent = recordRequests();
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'drop_response', route: 'create' });
    const worker = h.worker();
    expect(await worker.runOnce()).toBe(true);
    await requestCancel(h.store.ledger, op.operationId, h.clock.now());
    expect(await worker.runOnce()).toBe(true);
    const [deployment] = await h.deployments();
    expect(await h.get(op.operationId)).toMatchObject({
      status: 'succeeded',
      resourceId: deployment?.deployment_id,
    });
    expect(creates(sent)).toHaveLength(2);
    expect(creates(sent)[1]?.idempotencyKey).toBe(creates(sent)[0]?.idempotencyKey);
    expect(await h.deployments()).toHaveLength(1);
  });

  it('cancel during backoff after a 503: cancelled, nothing deployed', async () => {
    const h = await harness('key', new FakeClock());
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'status', status: 503, route: 'create' });
    const worker = h.worker();
    expect(await worker.runOnce()).toBe(true);
    await requestCancel(h.store.ledger, op.operationId, h.clock.now());
    expect(await worker.runOnce()).toBe(true);
    expect(await h.get(op.operationId)).toMatchObject({ status: 'cancelled', dispatched: false });
    expect(await h.deployments()).toHaveLength(0);
  });
});

describe('Worker with Executor.start', () => {
  it('an accepted call is carried out once; a retry of the call replays the stored result', async () => {
    const h = await harness('key', new FakeClock());
    const executor = new Executor({
      store: h.store,
      authorize: () => true,
      clock: h.clock,
      inFlightWaitMs: 0,
    });
    const deploy = { name: 'deploy', version: 1, policy: TEST_POLICY };
    const call = { principal: 'alice', workspace: 'team-a', key: 'deploy-billing-1', args };
    const accepted = await executor.start(deploy, call);
    expect(accepted).toMatchObject({ ok: true, result: { status: 'accepted' } });
    const operationId = accepted.ok ? accepted.operationId : '';
    expect(await h.get(operationId)).toMatchObject({ deadlineAt: h.clock.now() + TEST_POLICY.totalMs });

    expect(await h.worker().runOnce()).toBe(true);
    const [deployment] = await h.deployments();
    const replay = await executor.start(deploy, call);
    expect(replay).toEqual({
      ok: true,
      replayed: true,
      operationId,
      attemptId: expect.any(String),
      result: {
        status: 'succeeded',
        operation_id: operationId,
        resource_id: deployment?.deployment_id,
        deployment_id: deployment?.deployment_id,
        service: 'billing',
        version: '1.4.2',
      },
    });
    expect(await h.deployments()).toHaveLength(1);
  });
});
