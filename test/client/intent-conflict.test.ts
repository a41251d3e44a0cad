import { afterEach, describe, expect, it } from 'vitest';
import { IdemClient } from '../../packages/idem/src/client/idem-client.js';
import { IntentJournal } from '../../packages/idem/src/client/intent-journal.js';
import { TOOL_ERROR_CODES } from '../../packages/idem/src/client/tool-error-codes.js';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { ScriptedServer, drive, result, scriptedClient, tempJournal } from '../helpers/client-fixtures.js';
import { cleanup } from '../helpers/mcp-fixtures.js';

afterEach(cleanup);

const POLICY = {
  totalMs: 10_000,
  attemptTimeoutMs: 3_000,
  maxAttempts: 1,
  baseDelayMs: 100,
  maxDelayMs: 1_000,
};

function noteServer(clock: FakeClock, hangFirst = false): ScriptedServer {
  return new ScriptedServer(clock).script('create_note', (call, i) =>
    hangFirst && i === 0
      ? 'hang'
      : result({ status: 'succeeded', operation_id: 'op_1', note_id: `note_${String(call.args.body)}` }),
  );
}

const REFUSAL = {
  status: 'failed',
  intentId: 'step-1',
  attempts: 0,
  error: { code: 'payload_conflict', retryable: false },
};

describe('IdemClient: an intent id reused for another action is refused as a value, nothing sent', () => {
  it('other arguments or another tool under a settled intent: payload_conflict, the intent untouched', async () => {
    const clock = new FakeClock();
    const server = noteServer(clock);
    const lines: string[] = [];
    const idem = await scriptedClient(server, clock, { policy: POLICY, logger: (line) => lines.push(line) });
    const first = await drive(clock, idem.call('create_note', { body: 'a' }, { intentId: 'step-1' }));
    expect(first).toMatchObject({ status: 'succeeded', intentId: 'step-1' });
    const before = idem.journal.require('step-1');

    const otherArgs = await drive(clock, idem.call('create_note', { body: 'b' }, { intentId: 'step-1' }));
    const otherTool = await drive(clock, idem.call('create_ticket', { body: 'a' }, { intentId: 'step-1' }));

    expect(otherArgs).toMatchObject({ ...REFUSAL, tool: 'create_note' });
    expect(otherTool).toMatchObject({ ...REFUSAL, tool: 'create_ticket' });
    if (otherArgs.status !== 'failed') throw new Error('unreachable');
    expect(TOOL_ERROR_CODES).toContain(otherArgs.error.code);
    expect(otherArgs.error.message).toContain('step-1');
    expect(otherArgs.nextAction).toContain('new intentId');
    expect(server.calls).toHaveLength(1);
    expect(idem.journal.require('step-1')).toEqual(before);
    // One outcome line per refusal too, with its code and never the key.
    const outcomes = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(outcomes.map((line) => line.code)).toEqual([undefined, 'payload_conflict', 'payload_conflict']);
    expect(lines.join('\n')).not.toContain(first.key);
  });

  it('under an unsettled intent: refused without an attempt; the recorded action then resumes with its key', async () => {
    const clock = new FakeClock();
    const server = noteServer(clock, true);
    const idem = await scriptedClient(server, clock, { policy: POLICY });
    const first = await drive(clock, idem.call('create_note', { body: 'a' }, { intentId: 'step-1' }));
    expect(first).toMatchObject({ status: 'outcome_unknown', attempts: 1 });

    const refused = await drive(clock, idem.call('create_note', { body: 'b' }, { intentId: 'step-1' }));
    const refusedResume = await drive(clock, idem.resume('step-1', { args: { body: 'b' } }));

    expect(refused).toMatchObject(REFUSAL);
    expect(refusedResume).toMatchObject(REFUSAL);
    expect(server.calls).toHaveLength(1);
    expect(idem.journal.require('step-1')).toMatchObject({ status: 'outcome_unknown', attempts: 1 });
    const resumed = await drive(clock, idem.call('create_note', { body: 'a' }, { intentId: 'step-1' }));
    expect(resumed).toMatchObject({ status: 'succeeded', key: first.key, result: { note_id: 'note_a' } });
    expect(server.calls.map((c) => c.args)).toEqual([
      { body: 'a', idempotency_key: first.key },
      { body: 'a', idempotency_key: first.key },
    ]);
  });

  it('recorded by another process between the look-up and the write: compared with that action', async () => {
    const clock = new FakeClock();
    const server = noteServer(clock);
    const { path } = tempJournal(clock);
    const other = IntentJournal.open(path, { clock });
    // This process looks first and sees nothing; the other process writes the id right then.
    class RacingJournal extends IntentJournal {
      #raced = false;
      override get(intentId: string) {
        if (this.#raced) return super.get(intentId);
        this.#raced = true;
        other.begin({
          intentId,
          tool: 'create_note',
          keyField: 'idempotency_key',
          key: 'k-other',
          args: { body: 'a' },
        });
        return undefined;
      }
    }
    const journal = new RacingJournal(openSqlite(path), { clock });
    const idem = new IdemClient({ connect: () => server.connect(), journal, clock, policy: POLICY });

    const refused = await drive(clock, idem.call('create_note', { body: 'b' }, { intentId: 'step-1' }));

    expect(refused).toMatchObject({ ...REFUSAL, key: 'k-other' });
    expect(server.calls).toHaveLength(0);
    other.close();
    journal.close();
  });
});
