import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { callIdentity } from 'idem/ai-sdk';
import { IntentJournal } from 'idem/client';
import type { FrameworkSend } from '../../packages/idem/src/frameworks/framework-connection.js';
import { KeyedCalls } from '../../packages/idem/src/frameworks/keyed-calls.js';
import { withoutKey } from '../../packages/idem/src/frameworks/key-schema.js';
import { modelResult } from '../../packages/idem/src/frameworks/model-result.js';
import { idemError, result } from '../helpers/client-fixtures.js';
import { cleanup, makeTempDir } from '../helpers/mcp-fixtures.js';

// The part the framework adapters share, on a scripted `send` (what a framework's own client would
// answer or throw): the key made in code, journaled before the first send, the same on every send;
// what the model gets for answers that are not final; framework errors read as the client reads the SDK's.

afterAll(cleanup);

interface Sent {
  readonly name: string;
  readonly args: Record<string, unknown>;
}

function scripted(answer: (sent: Sent, index: number) => unknown): { send: FrameworkSend; sent: Sent[] } {
  const sent: Sent[] = [];
  const send: FrameworkSend = async (name, args) => {
    sent.push({ name, args });
    const reply = answer({ name, args }, sent.length - 1);
    if (reply instanceof Error) throw reply;
    return reply;
  };
  return { send, sent };
}

function journal(): IntentJournal {
  return IntentJournal.open(join(makeTempDir('idem-keyed-calls-'), 'intents.sqlite'));
}

// Small budgets on the real clock: every wait here ends by the deadline, far below the test timeout.
const policy = { totalMs: 600, attemptTimeoutMs: 200, maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 20 };

describe('callIdentity', () => {
  it('one key per run and call id, the same every time; a readable intent id under the run', () => {
    expect(callIdentity('run-1', 'call-1')).toEqual(callIdentity('run-1', 'call-1'));
    expect(callIdentity('run-1', 'call-1').key).not.toBe(callIdentity('run-2', 'call-1').key);
    expect(callIdentity('run-1', 'call-1').key).not.toBe(callIdentity('run-1', 'call-2').key);
    expect(callIdentity('run-1', 'call-1').intentId).toBe('run-1/call-1');
    expect(callIdentity('run-1', 'é'.repeat(300)).intentId).toMatch(/^run-1\/#[\w-]{43}$/);
    expect(callIdentity('run-1', 'call-1').key).toMatch(/^agent_[\w-]{43}$/);
  });
});

describe('withoutKey', () => {
  it('removes the key from properties and required, and nothing else', () => {
    const schema = {
      type: 'object',
      properties: { idempotency_key: { type: 'string' }, body: { type: 'string' } },
      required: ['idempotency_key', 'body'],
    };
    expect(withoutKey(schema, 'idempotency_key')).toEqual({
      type: 'object',
      properties: { body: { type: 'string' } },
      required: ['body'],
    });
    expect(schema.required).toEqual(['idempotency_key', 'body']);
  });
});

describe('KeyedCalls', () => {
  it('journals the key before the first send and sends it on every attempt; a key the model sent is dropped', async () => {
    const j = journal();
    const { send, sent } = scripted((_, i) => {
      // Before the first send the journal already holds the call with its key.
      expect(j.get('run-a/call-1')?.key).toBe(callIdentity('run-a', 'call-1').key);
      return i === 0 ? new Error('socket hang up') : result({ status: 'succeeded', note_id: 'note_1' });
    });
    const calls = new KeyedCalls(send, { journal: j, runId: 'run-a', policy });
    const outcome = await calls.call('create_note', { body: 'x', idempotency_key: 'invented' }, 'call-1');
    expect(outcome.status).toBe('succeeded');
    expect(sent).toHaveLength(2);
    expect(sent[0]?.args).toEqual({ body: 'x', idempotency_key: callIdentity('run-a', 'call-1').key });
    expect(sent[1]?.args).toEqual(sent[0]?.args);
  });

  it('the same call id with other arguments is refused, nothing sent', async () => {
    const { send, sent } = scripted(() => result({ status: 'succeeded' }));
    const calls = new KeyedCalls(send, { journal: journal(), runId: 'run-b', policy });
    await calls.call('create_note', { body: 'one' }, 'call-1');
    const other = await calls.call('create_note', { body: 'two' }, 'call-1');
    expect(other.status === 'failed' && other.error.code).toBe('payload_conflict');
    expect(modelResult(other, 'get_operation')).toMatchObject({
      status: 'failed',
      error: { code: 'payload_conflict' },
    });
    expect(sent).toHaveLength(1);
  });

  it('an operation still running at the deadline reaches the model as in_progress, naming the status tool', async () => {
    // Both the tool and the status tool say: still running.
    const { send } = scripted(() => result({ status: 'running', operation_id: 'op_1' }));
    const calls = new KeyedCalls(send, { journal: journal(), runId: 'run-c', policy, pollIntervalMs: 50 });
    const outcome = await calls.call('start_deployment', { service: 'api' }, 'call-1');
    const shown = modelResult(outcome, calls.operationTool);
    expect(shown).toMatchObject({ status: 'in_progress', operation_id: 'op_1', reason: 'running' });
    expect(shown.next_action).toMatch(/Call get_operation with operation_id op_1/);
    expect(calls.unsettled().map((intent) => intent.intentId)).toEqual(['run-c/call-1']);
  });

  it('no answer within the deadline: outcome_unknown for the model; resume sends the same key later', async () => {
    let down = true;
    const { send, sent } = scripted(() =>
      down ? new Error('fetch failed') : result({ status: 'succeeded' }),
    );
    const calls = new KeyedCalls(send, { journal: journal(), runId: 'run-d', policy });
    const outcome = await calls.call('create_note', { body: 'x' }, 'call-1');
    const shown = modelResult(outcome, calls.operationTool);
    expect(shown).toMatchObject({ status: 'outcome_unknown', reason: 'no_reply', intent_id: 'run-d/call-1' });
    expect(shown.next_action).toMatch(/Do not call create_note again/);
    down = false;
    const [intent] = calls.unsettled();
    const resumed = await calls.resumeIntent(intent?.intentId ?? '');
    expect(resumed.status).toBe('succeeded');
    expect(new Set(sent.map((s) => s.args.idempotency_key)).size).toBe(1);
  });

  it('a JSON-RPC error thrown by the framework is definitive: one send, failed', async () => {
    const rpc = Object.assign(new Error('MCP error -32602: Invalid params'), { code: -32602 });
    const { send, sent } = scripted(() => rpc);
    const calls = new KeyedCalls(send, { journal: journal(), runId: 'run-e', policy });
    const outcome = await calls.call('create_note', { body: 'x' }, 'call-1');
    expect(outcome.status === 'failed' && outcome.error.code).toBe('invalid_argument');
    expect(sent).toHaveLength(1);
  });

  it('an HTTP 503 the framework reports is retried with the same key; a 401 is forbidden at once', async () => {
    const unavailable = Object.assign(new Error('HTTP 503'), { statusCode: 503 });
    const first = scripted((_, i) => (i === 0 ? unavailable : result({ status: 'succeeded' })));
    const ok = await new KeyedCalls(first.send, { journal: journal(), runId: 'run-f', policy }).call(
      't',
      {},
      'c',
    );
    expect(ok.status).toBe('succeeded');
    expect(first.sent).toHaveLength(2);

    const refused = Object.assign(new Error('HTTP 401'), { statusCode: 401 });
    const second = scripted(() => refused);
    const no = await new KeyedCalls(second.send, { journal: journal(), runId: 'run-g', policy }).call(
      't',
      {},
      'c',
    );
    expect(no.status === 'failed' && no.error.code).toBe('forbidden');
    expect(second.sent).toHaveLength(1);
  });

  it('a server refusal reaches the model as failed with the code and next_action', async () => {
    const { send } = scripted(() => idemError('payload_conflict'));
    const calls = new KeyedCalls(send, { journal: journal(), runId: 'run-h', policy });
    const shown = modelResult(await calls.call('create_note', { body: 'x' }, 'call-1'), calls.operationTool);
    expect(shown).toEqual({
      status: 'failed',
      error: { code: 'payload_conflict', message: 'payload_conflict (scripted)', retryable: false },
      next_action: 'next action for payload_conflict',
    });
  });

  it('refuses a run id that cannot name a run', () => {
    const { send } = scripted(() => result({}));
    expect(() => new KeyedCalls(send, { journal: journal(), runId: '' })).toThrow(/runId/);
    expect(() => new KeyedCalls(send, { journal: journal(), runId: 'x'.repeat(121) })).toThrow(/runId/);
  });
});
