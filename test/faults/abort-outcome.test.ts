import { describe, expect, it, onTestFinished, vi } from 'vitest';
import type { CallOutcome } from '../../packages/idem/src/executor/executor.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import {
  callStart,
  DEPLOYMENT_ARGS,
  durableExecutor,
  startDeployment,
  storeFactories,
  type TestStore,
} from '../helpers/store-fixtures.js';

// An aborted call is reported as an abort (`aborted`, retryable, nothing committed), never as
// `internal`, on every engine: before the store is reached, and while a retry waits in flight. (An
// abort thrown by the effect itself is turned into `internal` by the adapters' error translation
// today: that part is the adapters'.)
describe.each(storeFactories)('an aborted call on $name', (factory) => {
  async function open(): Promise<TestStore> {
    const t = await factory.create();
    onTestFinished(() => t.close());
    return t;
  }

  const request = (key: string, signal?: AbortSignal) => ({
    principal: 'alice',
    workspace: 'ws-1',
    key,
    args: { body: 'hello' },
    ...(signal === undefined ? {} : { signal }),
  });

  function abortedError(outcome: CallOutcome) {
    if (outcome.ok) throw new Error(`expected a failure, got ${JSON.stringify(outcome.result)}`);
    return outcome.error;
  }

  it('answers aborted when the signal was aborted before the call', async () => {
    const t = await open();
    const outcome = await t.executor.run(t.createNote, request('k-1', AbortSignal.abort()));
    expect(abortedError(outcome)).toMatchObject({ code: 'aborted', retryable: true });
    expect(await t.countReceipts()).toBe(0);
  });

  it('answers aborted when the caller goes away while a retry waits for the running operation', async () => {
    const clock = new FakeClock();
    const t = await factory.create({ clock });
    onTestFinished(() => t.close());
    const executor = durableExecutor(t.store, { clock, inFlightWaitMs: 60_000 });
    const first = await callStart(executor, { key: 'deploy-1' });
    expect(first).toMatchObject({ ok: true, result: { status: 'accepted' } });

    const controller = new AbortController();
    const retry = executor.start(startDeployment, {
      principal: 'alice',
      workspace: 'ws-1',
      key: 'deploy-1',
      args: DEPLOYMENT_ARGS,
      signal: controller.signal,
    });
    await vi.waitUntil(() => clock.pendingSleepers > 0, { timeout: 10_000 });
    controller.abort();
    const error = abortedError(await retry);
    expect(error).toMatchObject({ code: 'aborted', retryable: true });
    expect(clock.pendingSleepers).toBe(0);
    // The operation is untouched: still accepted, and a retry without the abort reports it.
    expect(await callStart(durableExecutor(t.store, { clock }), { key: 'deploy-1' })).toMatchObject({
      ok: false,
      error: { code: 'in_progress', operationId: first.ok ? first.operationId : '' },
    });
  });
});
