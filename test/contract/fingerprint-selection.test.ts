import { describe, expect, it, onTestFinished } from 'vitest';
import type { FingerprintSelection } from '../../packages/idem/src/core/fingerprint-selection.js';
import type {
  CallOutcome,
  DurableOperation,
  IdempotentOperation,
} from '../../packages/idem/src/executor/executor.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { storeFactories, type NoteArgs, type TestStore } from '../helpers/store-fixtures.js';

/** create_note's arguments plus a free-text field the tests leave out of the fingerprint. */
type MemoArgs = NoteArgs & { memo?: string };

function status(outcome: CallOutcome): string {
  return outcome.ok
    ? `${String(outcome.result.status)}${outcome.replayed ? ' replayed' : ''}`
    : outcome.error.code;
}

for (const factory of storeFactories.filter((f) => f.name === 'sqlite' || f.name === 'postgres')) {
  describe(`fingerprint selection: ${factory.name}`, () => {
    async function open(): Promise<TestStore> {
      const t = await factory.create();
      onTestFinished(() => t.close());
      return t;
    }

    function noteWith(t: TestStore, selection: FingerprintSelection): IdempotentOperation<unknown, MemoArgs> {
      return { ...(t.noteOperation() as IdempotentOperation<unknown, MemoArgs>), fingerprint: selection };
    }

    function call(
      t: TestStore,
      operation: IdempotentOperation<unknown, MemoArgs>,
      key: string,
      args: MemoArgs,
    ) {
      return t.executor.run(operation, { principal: 'alice', workspace: 'ws-1', key, args });
    }

    it('replays the first result for a retry that rephrases an excluded field, and runs the effect once', async () => {
      const t = await open();
      const op = noteWith(t, { exclude: ['memo'] });
      const first = await call(t, op, 'k-1', { body: 'hello', memo: 'please open it' });
      const retry = await call(t, op, 'k-1', { body: 'hello', memo: 'kindly open it, thanks' });
      const omitted = await call(t, op, 'k-1', { body: 'hello' });
      expect([status(first), status(retry), status(omitted)]).toEqual([
        'succeeded',
        'succeeded replayed',
        'succeeded replayed',
      ]);
      expect(retry.ok && first.ok && retry.result).toEqual(first.ok && first.result);
      expect(await t.countNotes()).toBe(1);
      expect(await t.countReceipts()).toBe(1);
    });

    it('still refuses a retry that changes a covered field as payload_conflict, with nothing written', async () => {
      const t = await open();
      const excluding = noteWith(t, { exclude: ['memo'] });
      await call(t, excluding, 'k-1', { body: 'hello', memo: 'a' });
      expect(status(await call(t, excluding, 'k-1', { body: 'HELLO', memo: 'a' }))).toBe('payload_conflict');

      const including = noteWith(t, { include: ['body'] });
      await call(t, including, 'k-2', { body: 'hello', memo: 'a' });
      expect(status(await call(t, including, 'k-2', { body: 'hello', memo: 'b' }))).toBe(
        'succeeded replayed',
      );
      expect(status(await call(t, including, 'k-2', { body: 'bye', memo: 'a' }))).toBe('payload_conflict');
      expect(await t.countNotes()).toBe(2);
    });

    it('covers every argument by default, as before', async () => {
      const t = await open();
      const op = t.noteOperation() as IdempotentOperation<unknown, MemoArgs>;
      await call(t, op, 'k-1', { body: 'hello', memo: 'a' });
      expect(status(await call(t, op, 'k-1', { body: 'hello', memo: 'b' }))).toBe('payload_conflict');
      expect(await t.countNotes()).toBe(1);
    });

    it("keeps the first call's arguments on a durable operation a rephrased retry replays", async () => {
      const t = await open();
      const op: DurableOperation = {
        name: 'start_deployment',
        version: 1,
        fingerprint: { exclude: ['reason'] },
      };
      const request = (reason: string, service = 'api') => ({
        principal: 'alice',
        workspace: 'ws-1',
        key: 'k-deploy',
        args: { service, reason },
      });
      const first = await t.executor.start(op, request('ship the fix'));
      const retry = await t.executor.start(op, request('ship the bug fix now'));
      expect(status(first)).toBe('accepted');
      // No worker runs here: the retry waits its bound, then reports the same operation still running.
      expect(status(retry)).toBe('in_progress');
      expect(!retry.ok && first.ok && retry.error.operationId).toBe(first.ok && first.operationId);
      const record = first.ok ? await t.store.ledger.get(first.operationId) : undefined;
      expect(record?.args).toEqual({ service: 'api', reason: 'ship the fix' });
      expect(status(await t.executor.start(op, request('ship the fix', 'web')))).toBe('payload_conflict');
      expect(await t.countReceipts()).toBe(1);
    });
  });
}

describe('Executor.validate: fingerprint', () => {
  const base = { name: 'create_note', version: 1 };
  const code = (fingerprint: unknown): string | undefined => {
    try {
      Executor.validate({ ...base, fingerprint: fingerprint as FingerprintSelection });
      return undefined;
    } catch (error) {
      return (error as { code?: string }).code;
    }
  };

  it('refuses a selection that is empty, has both lists, excludes workspace or names the key', () => {
    expect(code({ include: [] })).toBe('invalid_argument');
    expect(code({ include: ['a'], exclude: ['b'] })).toBe('invalid_argument');
    expect(code({})).toBe('invalid_argument');
    expect(code({ exclude: ['workspace'] })).toBe('invalid_argument');
    expect(code({ exclude: ['idempotency_key'] })).toBe('invalid_argument');
    expect(code({ include: ['a', 'a'] })).toBe('invalid_argument');
    expect(code({ include: [1] })).toBe('invalid_argument');
    expect(code({ include: ['a'] })).toBeUndefined();
    expect(code({ exclude: [] })).toBeUndefined();
    expect(code(undefined)).toBeUndefined();
  });
});
