import { afterEach, describe, expect, it } from 'vitest';
import { IdemClient } from '../../packages/idem/src/client/idem-client.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { TransportFaults } from '../../packages/idem/src/testing/transport-faults.js';
import {
  ScriptedServer,
  drive,
  idemError,
  result,
  scriptedClient,
  tempJournal,
} from '../helpers/client-fixtures.js';
import { cleanup } from '../helpers/mcp-fixtures.js';

afterEach(cleanup);

const POLICY = {
  totalMs: 10_000,
  attemptTimeoutMs: 3_000,
  maxAttempts: 100,
  baseDelayMs: 100,
  maxDelayMs: 1_000,
};

function note(call: { args: Record<string, unknown> }, replayed = false) {
  return result({
    status: 'succeeded',
    operation_id: `op_${String(call.args.idempotency_key)}`,
    resource_id: `note_${String(call.args.idempotency_key)}`,
    note_id: `note_${String(call.args.idempotency_key)}`,
    replayed,
  });
}

describe('IdemClient: one key per intended action', () => {
  it('journals the intent before the first attempt and resends the same key on every retry', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock);
    const ref: { idem?: IdemClient } = {};
    const seenInJournal: unknown[] = [];
    server.script('create_note', (call, i) => {
      // At the server, before any answer: the journal already holds the intent with this key.
      seenInJournal.push(ref.idem?.unsettled().map((intent) => [intent.key, intent.status]));
      return i < 2 ? idemError('busy', { retryable: true, retry_after_ms: 50 }) : note(call);
    });
    const idem = (ref.idem = await scriptedClient(server, clock, { policy: POLICY }));

    const outcome = await drive(clock, idem.call('create_note', { workspace: 'w', body: 'b' }));

    if (outcome.status !== 'succeeded') throw new Error(`expected success, got ${JSON.stringify(outcome)}`);
    const keys = server.callsOf('create_note').map((c) => c.args.idempotency_key);
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
    expect(seenInJournal[0]).toEqual([[keys[0], 'pending']]);
    expect(outcome.key).toBe(keys[0]);
    expect(outcome.attempts).toBe(3);
    expect(outcome.result.note_id).toBe(`note_${String(keys[0])}`);
    expect(outcome.operationId).toBe(`op_${String(keys[0])}`);
    const stored = idem.journal.require(outcome.intentId);
    expect(stored).toMatchObject({ status: 'succeeded', attempts: 3, operationId: outcome.operationId });
    expect(stored.args).toEqual({ workspace: 'w', body: 'b' });
    expect(idem.unsettled()).toEqual([]);
  });

  it.each(['payload_conflict', 'forbidden', 'invalid_argument', 'key_expired'])(
    'returns %s at once, without a retry (even if a server marked it retryable)',
    async (code) => {
      const clock = new FakeClock();
      const server = new ScriptedServer(clock).script('create_note', () =>
        idemError(code, { retryable: true }),
      );
      const idem = await scriptedClient(server, clock, { policy: POLICY });

      const outcome = await drive(clock, idem.call('create_note', { body: 'b' }));

      expect(outcome).toMatchObject({ status: 'failed', attempts: 1, error: { code } });
      expect(server.callsOf('create_note')).toHaveLength(1);
      expect(clock.monotonic()).toBe(0);
      expect(idem.journal.require(outcome.intentId).status).toBe('failed');
    },
  );

  it('does not retry an error the server did not mark retryable, nor a JSON-RPC error', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock).script('create_note', () =>
      idemError('internal', { status: 'failed' }),
    );
    const idem = await scriptedClient(server, clock, { policy: POLICY });
    expect(await drive(clock, idem.call('create_note', {}))).toMatchObject({
      status: 'failed',
      error: { code: 'internal' },
      attempts: 1,
    });
    // An unknown tool is a JSON-RPC/protocol-level refusal from this server: definitive.
    const other = await drive(clock, idem.call('no_such_tool', {}));
    expect(other.status).toBe('failed');
    expect(server.callsOf('no_such_tool')).toHaveLength(1);
  });
});

describe('IdemClient: the deadline', () => {
  it('gives up within the total budget when nothing answers, capping each attempt by what remains', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock).script('create_note', () => 'hang');
    const idem = await scriptedClient(server, clock, { policy: POLICY });

    const outcome = await drive(clock, idem.call('create_note', { body: 'b' }));
    const endedAt = clock.monotonic();

    expect(outcome).toMatchObject({ status: 'outcome_unknown', reason: 'no_reply' });
    if (outcome.status !== 'outcome_unknown') throw new Error('unreachable');
    expect(outcome.lastError?.code).toBe('timeout');
    expect(outcome.nextAction).toContain(outcome.intentId);
    // Within the budget, with the 10 ms granularity of the fake clock as the only margin.
    expect(endedAt).toBeLessThanOrEqual(POLICY.totalMs + 10);
    expect(endedAt).toBeGreaterThanOrEqual(POLICY.totalMs - POLICY.maxDelayMs);
    const calls = server.callsOf('create_note');
    expect(calls.length).toBe(outcome.attempts);
    expect(calls.length).toBeGreaterThanOrEqual(4); // 3 s attempts + backoff in 10 s, the last one capped
    // Full attempts (3 s each) until the remaining budget is smaller: the last one is cut short.
    const last = calls.at(-1)?.at ?? 0;
    expect(POLICY.totalMs - last).toBeLessThan(POLICY.attemptTimeoutMs);
    expect(idem.journal.require(outcome.intentId).status).toBe('outcome_unknown');
  });

  it('honours retry_after_ms when it fits the budget', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock).script('create_note', (call, i) =>
      i === 0 ? idemError('busy', { retryable: true, retry_after_ms: 700 }) : note(call),
    );
    const idem = await scriptedClient(server, clock, { policy: POLICY });

    const outcome = await drive(clock, idem.call('create_note', { body: 'b' }));

    expect(outcome.status).toBe('succeeded');
    const [first, second] = server.callsOf('create_note');
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(700);
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeLessThanOrEqual(710);
  });

  it('stops at once when retry_after_ms does not fit what remains', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock).script('create_note', () =>
      idemError('busy', { retryable: true, retry_after_ms: 60_000 }),
    );
    const idem = await scriptedClient(server, clock, { policy: POLICY });

    const outcome = await drive(clock, idem.call('create_note', { body: 'b' }));

    expect(outcome).toMatchObject({ status: 'outcome_unknown', reason: 'no_reply', attempts: 1 });
    expect(clock.monotonic()).toBe(0);
  });

  it('uses full-jitter backoff between attempts', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock).script('create_note', (call, i) =>
      i < 3 ? idemError('busy', { retryable: true }) : note(call),
    );
    const idem = await scriptedClient(server, clock, { policy: POLICY, random: () => 0.5 });

    await drive(clock, idem.call('create_note', { body: 'b' }), 1);

    const at = server.callsOf('create_note').map((c) => c.at);
    // Ceilings 100, 200, 400 ms; half of each with random() = 0.5.
    expect([at[1]! - at[0]!, at[2]! - at[1]!, at[3]! - at[2]!]).toEqual([50, 100, 200]);
  });
});

describe('IdemClient: unfinished and uncertain operations', () => {
  it('retries in_progress with the same key, then follows the operation with get_operation', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock)
      .script('start_deployment', () =>
        idemError('in_progress', {
          retryable: true,
          retry_after_ms: 1000,
          operation_id: 'op_1',
          status: 'running',
        }),
      )
      .script('get_operation', (_call, i) =>
        i < 2
          ? result({ status: 'running', operation_id: 'op_1' })
          : result({
              status: 'succeeded',
              operation_id: 'op_1',
              result: { status: 'succeeded', resource_id: 'dep_1' },
            }),
      );
    const idem = await scriptedClient(server, clock, {
      policy: { ...POLICY, maxAttempts: 2 },
      pollIntervalMs: 500,
    });

    const outcome = await drive(clock, idem.call('start_deployment', { service: 's', version: '1' }));

    expect(outcome).toMatchObject({
      status: 'succeeded',
      operationId: 'op_1',
      attempts: 2,
      result: { resource_id: 'dep_1' },
    });
    expect(server.callsOf('get_operation').map((c) => c.args)).toEqual([
      { operation_id: 'op_1' },
      { operation_id: 'op_1' },
      { operation_id: 'op_1' },
    ]);
  });

  it('follows an accepted operation to its end and reports a failed one as failed', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock)
      .script('start_deployment', () =>
        result({ status: 'accepted', operation_id: 'op_2', next_action: 'poll' }),
      )
      .script('get_operation', () =>
        result({
          status: 'failed',
          operation_id: 'op_2',
          error: { code: 'internal', message: 'provider said no', retryable: false },
        }),
      );
    const idem = await scriptedClient(server, clock, { policy: POLICY, pollIntervalMs: 200 });

    const outcome = await drive(clock, idem.call('start_deployment', { service: 's' }));

    expect(outcome).toMatchObject({ status: 'failed', operationId: 'op_2', error: { code: 'internal' } });
    expect(server.callsOf('get_operation')[0]?.at).toBe(200);
  });

  it('stops at the first poll that confirms an outcome_unknown operation, with its id and next_action', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock)
      .script('start_deployment', () =>
        idemError('outcome_unknown', { operation_id: 'op_3', status: 'outcome_unknown' }),
      )
      .script('get_operation', () =>
        result({
          status: 'outcome_unknown',
          operation_id: 'op_3',
          next_action: 'Ask an operator about op_3.',
        }),
      );
    const idem = await scriptedClient(server, clock, { policy: POLICY, pollIntervalMs: 1000 });

    const outcome = await drive(clock, idem.call('start_deployment', { service: 's' }));

    expect(outcome).toMatchObject({
      status: 'outcome_unknown',
      reason: 'server_unknown',
      operationId: 'op_3',
      nextAction: 'Ask an operator about op_3.',
      attempts: 1,
    });
    expect(server.callsOf('start_deployment')).toHaveLength(1); // never resent: it may have acted
    // Only an operator settles it: asking again until the deadline would only repeat the answer.
    expect(server.callsOf('get_operation')).toHaveLength(1);
    expect(clock.monotonic()).toBe(0);
    expect(idem.journal.require(outcome.intentId)).toMatchObject({
      status: 'outcome_unknown',
      operationId: 'op_3',
    });
  });

  it('retries an outcome_unknown the server marks retryable (a failure after a local commit)', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock).script('create_note', (call, i) =>
      i === 0
        ? idemError('outcome_unknown', { retryable: true, status: 'outcome_unknown' })
        : note(call, true),
    );
    const idem = await scriptedClient(server, clock, { policy: POLICY });
    const outcome = await drive(clock, idem.call('create_note', { body: 'b' }));
    expect(outcome).toMatchObject({ status: 'succeeded', replayed: true, attempts: 2 });
  });
});

describe('IdemClient: lost replies and connections', () => {
  it('retries a lost response with the same key and gets the original result', async () => {
    const clock = new FakeClock();
    const faults = new TransportFaults({ clock }).inject({ fault: 'drop_response', tool: 'create_note' });
    const server = new ScriptedServer(clock).script('create_note', (call, i) => note(call, i > 0));
    const idem = await scriptedClient(server, clock, {
      policy: POLICY,
      connect: () => server.connect((t) => faults.wrap(t)),
    });

    const outcome = await drive(clock, idem.call('create_note', { body: 'b' }));

    expect(outcome).toMatchObject({ status: 'succeeded', replayed: true, attempts: 2 });
    expect(faults.events.map((e) => e.fault)).toEqual(['drop_response']);
    expect(server.calls[1]?.at).toBeGreaterThanOrEqual(POLICY.attemptTimeoutMs); // after the first timed out
  });

  it('reconnects after the connection closed mid-call', async () => {
    const clock = new FakeClock();
    const faults = new TransportFaults({ clock }).inject({ fault: 'close_before_response' });
    const server = new ScriptedServer(clock).script('create_note', (call, i) => note(call, i > 0));
    let connections = 0;
    const idem = await scriptedClient(server, clock, {
      policy: POLICY,
      connect: () => {
        connections += 1;
        return server.connect((t) => faults.wrap(t));
      },
    });

    const outcome = await drive(clock, idem.call('create_note', { body: 'b' }));

    expect(outcome).toMatchObject({ status: 'succeeded', replayed: true, attempts: 2 });
    expect(connections).toBe(2);
    expect(server.calls[1]?.at).toBeLessThan(POLICY.attemptTimeoutMs); // no timeout waited for
  });

  it('a delayed reply that arrives after the attempt timed out is ignored; the retry answers', async () => {
    const clock = new FakeClock();
    const faults = new TransportFaults({ clock }).inject({ fault: 'delay_response', delayMs: 5_000 });
    const server = new ScriptedServer(clock).script('create_note', (call, i) => note(call, i > 0));
    const idem = await scriptedClient(server, clock, {
      policy: POLICY,
      connect: () => server.connect((t) => faults.wrap(t)),
    });
    const outcome = await drive(clock, idem.call('create_note', { body: 'b' }));
    expect(outcome).toMatchObject({ status: 'succeeded', replayed: true, attempts: 2 });
  });
});

describe('IdemClient: intents', () => {
  it('resumes an intent by id with the same key; a settled one answers from the journal', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock).script('create_note', (call, i) =>
      i === 0 ? 'hang' : note(call, true),
    );
    const idem = await scriptedClient(server, clock, { policy: { ...POLICY, maxAttempts: 1 } });

    const first = await drive(clock, idem.call('create_note', { body: 'b' }, { intentId: 'write-report' }));
    expect(first).toMatchObject({ status: 'outcome_unknown', intentId: 'write-report' });
    expect(idem.unsettled().map((i) => i.intentId)).toEqual(['write-report']);

    // The same intended action again (e.g. a restarted workflow step): same key, no second action.
    const again = await drive(clock, idem.call('create_note', { body: 'b' }, { intentId: 'write-report' }));
    expect(again).toMatchObject({ status: 'succeeded', key: first.key });
    const calls = server.callsOf('create_note');
    expect(calls.map((c) => c.args.idempotency_key)).toEqual([first.key, first.key]);

    const settled = await idem.resume('write-report');
    expect(settled).toEqual(again);
    expect(server.callsOf('create_note')).toHaveLength(2);

    // Other arguments under the same id: the typed refusal, nothing sent (see intent-conflict.test.ts).
    expect(await idem.call('create_note', { body: 'other' }, { intentId: 'write-report' })).toMatchObject({
      status: 'failed',
      error: { code: 'payload_conflict', retryable: false },
    });
    expect(server.callsOf('create_note')).toHaveLength(2);
  });

  it('hands an intent to another agent: same key, same operation, and the receiver finishes it', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock).script('create_note', (call, i) =>
      i === 0
        ? idemError('busy', { retryable: true, retry_after_ms: 1, operation_id: 'op_h' })
        : note(call, true),
    );
    const a = await scriptedClient(server, clock, { policy: { ...POLICY, maxAttempts: 1 } });
    const given = await drive(clock, a.call('create_note', { body: 'b' }));
    expect(given.status).toBe('outcome_unknown');
    const handoff = JSON.parse(JSON.stringify(a.journal.export(given.intentId))) as ReturnType<
      typeof a.journal.export
    >;
    expect(handoff).toMatchObject({ format: 'idem.intent/1', key: given.key, operationId: 'op_h' });

    const b = await scriptedClient(server, clock, { policy: POLICY });
    b.journal.import(handoff);
    b.journal.import(handoff); // harmless twice
    const finished = await drive(clock, b.resume(given.intentId));

    expect(finished).toMatchObject({ status: 'succeeded', key: given.key });
    expect(server.callsOf('create_note').map((c) => c.args.idempotency_key)).toEqual([given.key, given.key]);
    expect(() => b.journal.import({ ...handoff, key: 'another' })).toThrow(/another action/);
  });

  it('resumes from the operation id alone when the journal keeps no arguments', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock)
      .script('create_note', () => 'hang')
      .script('get_operation', () =>
        result({ status: 'succeeded', operation_id: 'op_x', result: { status: 'succeeded', note_id: 'n1' } }),
      );
    const { journal } = tempJournal(clock);
    journal.import({
      format: 'idem.intent/1',
      intentId: 'i1',
      tool: 'create_note',
      keyField: 'idempotency_key',
      key: 'k1',
      argsHash: 'unknown',
      operationId: 'op_x',
    });
    const idem = new IdemClient({ connect: () => server.connect(), journal, clock, policy: POLICY });
    const outcome = await drive(clock, idem.resume('i1'));
    expect(outcome).toMatchObject({ status: 'succeeded', result: { note_id: 'n1' }, attempts: 0 });
    expect(server.callsOf('create_note')).toHaveLength(0);
  });

  it('throws for misuse and for the caller abort, leaving the intent pending', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock).script('create_note', () => 'hang');
    const idem = await scriptedClient(server, clock, { policy: POLICY });
    await expect(idem.call('create_note', { idempotency_key: 'mine' })).rejects.toMatchObject({
      code: 'invalid_argument',
    });
    await expect(idem.call('create_note', { f: () => 1 })).rejects.toMatchObject({
      code: 'invalid_argument',
    });
    await expect(idem.resume('nope')).rejects.toMatchObject({ code: 'not_found' });

    const controller = new AbortController();
    const pending = idem.call(
      'create_note',
      { body: 'b' },
      { signal: controller.signal, intentId: 'aborted' },
    );
    while (server.calls.length === 0) await new Promise((resolve) => setImmediate(resolve));
    controller.abort(new Error('caller gave up'));
    await expect(pending).rejects.toThrow('caller gave up');
    expect(idem.journal.require('aborted').status).toBe('pending');
  });
});
