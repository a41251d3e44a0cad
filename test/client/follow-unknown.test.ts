import { afterEach, describe, expect, it } from 'vitest';
import { IdemClient } from '../../packages/idem/src/client/idem-client.js';
import { systemClock } from '../../packages/idem/src/core/clock.js';
import { DEFAULT_RETRY_POLICY } from '../../packages/idem/src/core/retry-policy.js';
import { ScriptedServer, idemError, result, tempJournal } from '../helpers/client-fixtures.js';
import { cleanup } from '../helpers/mcp-fixtures.js';

afterEach(cleanup);

/** get_operation's answer for an operation the server cannot settle itself, as operationView writes it. */
function unknownOperation(retryable: boolean) {
  return result({
    status: 'outcome_unknown',
    operation_id: 'op_u',
    operation: 'start_deployment',
    error: {
      code: 'outcome_unknown',
      message: 'the provider may have deployed it',
      retryable,
    },
    next_action: 'An operator must check whether the action took effect and settle operation op_u.',
  });
}

/**
 * On the real clock with the default policy (30 s budget, polls 1 s apart): a status answer that
 * only an operator can change ends the call at once, instead of being asked again until the deadline.
 */
describe('IdemClient: a non-retryable outcome_unknown from the status tool ends the follow at once', () => {
  it.each([
    ['the status answer (get_operation succeeds with status outcome_unknown)', false],
    ['an error answer (get_operation answers isError outcome_unknown)', true],
  ])('%s', { timeout: 60_000 }, async (_, asError) => {
    const server = new ScriptedServer(systemClock)
      .script('start_deployment', () =>
        idemError('outcome_unknown', { operation_id: 'op_u', status: 'outcome_unknown' }),
      )
      .script('get_operation', () =>
        asError
          ? idemError('outcome_unknown', { operation_id: 'op_u', status: 'outcome_unknown' })
          : unknownOperation(false),
      );
    const idem = new IdemClient({ connect: () => server.connect(), journal: tempJournal().journal });

    const started = performance.now();
    const outcome = await idem.call('start_deployment', { service: 's' });
    const elapsedMs = performance.now() - started;

    expect(outcome).toMatchObject({
      status: 'outcome_unknown',
      reason: 'server_unknown',
      operationId: 'op_u',
      attempts: 1,
      lastError: { code: 'outcome_unknown', retryable: false },
    });
    expect(outcome.status === 'outcome_unknown' && outcome.nextAction).toBe(
      asError
        ? 'next action for outcome_unknown'
        : 'An operator must check whether the action took effect and settle operation op_u.',
    );
    expect(server.callsOf('start_deployment')).toHaveLength(1);
    expect(server.callsOf('get_operation')).toHaveLength(1);
    // Well under the 30 s budget (a loaded machine included); before the fix it took all of it.
    expect(DEFAULT_RETRY_POLICY.totalMs).toBe(30_000);
    expect(elapsedMs).toBeLessThan(5_000);
    await idem.close();
  });

  it('a retryable outcome_unknown is polled until the server knows', { timeout: 60_000 }, async () => {
    const server = new ScriptedServer(systemClock)
      .script('start_deployment', () => result({ status: 'accepted', operation_id: 'op_u' }))
      .script('get_operation', (_, i) =>
        i < 2
          ? unknownOperation(true)
          : result({ status: 'succeeded', operation_id: 'op_u', result: { ok: 1 } }),
      );
    const idem = new IdemClient({
      connect: () => server.connect(),
      journal: tempJournal().journal,
      pollIntervalMs: 20,
    });

    const outcome = await idem.call('start_deployment', { service: 's' });

    expect(outcome).toMatchObject({ status: 'succeeded', result: { ok: 1 } });
    expect(server.callsOf('get_operation')).toHaveLength(3);
    await idem.close();
  });
});
