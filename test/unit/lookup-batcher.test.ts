import { describe, expect, it } from 'vitest';
import { IdemError } from '../../packages/idem/src/core/errors.js';
import type { OperationIdentity } from '../../packages/idem/src/core/operation-identity.js';
import type { Existing } from '../../packages/idem/src/core/receipt.js';
import { LookupBatcher, MAX_LOOKUP_BATCH } from '../../packages/idem/src/adapters/sql/lookup-batcher.js';
import type { SignalOption } from '../../packages/idem/src/ports/maybe-async.js';

const id = (key: string): OperationIdentity => ({
  principal: 'alice',
  workspace: 'ws-1',
  operation: 'create_note',
  version: 1,
  key,
});

/** What the fake database holds for a key: a tombstone named after it, or nothing for `absent-…`. */
function answer(identity: OperationIdentity): Existing | undefined {
  if (identity.key.startsWith('absent')) return undefined;
  return {
    kind: 'tombstone',
    tombstone: { identity, fingerprint: `f-${identity.key}`, receiptExpiredAt: 1, expiresAt: 2 },
  };
}

/** A batcher over a fake database, with the statements it was sent. */
function setUp(
  options: { many?: (keys: string[]) => Promise<(Existing | undefined)[]>; firstAtOnce?: boolean } = {},
) {
  const sent: { many?: string[]; one?: string; signal?: AbortSignal }[] = [];
  const gates: (() => void)[] = [];
  const batcher = new LookupBatcher(
    async (identities) => {
      const keys = identities.map((i) => i.key);
      sent.push({ many: keys });
      if (options.many !== undefined) return options.many(keys);
      return identities.map(answer);
    },
    async (identity, { signal }: SignalOption) => {
      sent.push({ one: identity.key, ...(signal === undefined ? {} : { signal }) });
      if (identity.key.startsWith('bad')) throw new IdemError('internal', `cannot look up ${identity.key}`);
      if (identity.key.startsWith('slow')) await new Promise<void>((resolve) => gates.push(resolve));
      return answer(identity);
    },
    options.firstAtOnce === undefined ? {} : { firstAtOnce: options.firstAtOnce },
  );
  return { batcher, sent, gates };
}

describe('LookupBatcher', () => {
  it('reads the lookups of one turn in one statement, each caller getting its own answer', async () => {
    const { batcher, sent } = setUp();
    const keys = ['a', 'absent-1', 'b', 'a', 'c'];
    const found = await Promise.all(keys.map((k) => batcher.lookup(id(k))));
    expect(sent).toEqual([{ many: keys }]);
    expect(found).toEqual(keys.map((k) => answer(id(k))));
    expect(found[1]).toBeUndefined();
  });

  it('sends a lookup alone as the single statement, with its signal, and each turn its own', async () => {
    const { batcher, sent } = setUp();
    const signal = new AbortController().signal;
    expect(await batcher.lookup(id('a'), { signal })).toEqual(answer(id('a')));
    expect(await batcher.lookup(id('b'))).toEqual(answer(id('b')));
    expect(sent).toEqual([{ one: 'a', signal }, { one: 'b' }]);
  });

  it(`splits more than ${MAX_LOOKUP_BATCH} lookups of one turn into statements of at most that many`, async () => {
    const { batcher, sent } = setUp();
    const keys = Array.from({ length: 2 * MAX_LOOKUP_BATCH + 3 }, (_, i) => `k${i}`);
    const found = await Promise.all(keys.map((k) => batcher.lookup(id(k))));
    expect(sent.map((s) => s.many?.length)).toEqual([MAX_LOOKUP_BATCH, MAX_LOOKUP_BATCH, 3]);
    expect(sent.flatMap((s) => s.many)).toEqual(keys);
    expect(found).toEqual(keys.map((k) => answer(id(k))));
  });

  it("rejects an aborted caller's lookup with its reason and answers the others", async () => {
    const { batcher, sent } = setUp();
    const before = new AbortController();
    before.abort(new Error('gone before'));
    await expect(batcher.lookup(id('x'), { signal: before.signal })).rejects.toThrow('gone before');

    const during = new AbortController();
    const pending = [
      batcher.lookup(id('a')),
      batcher.lookup(id('b'), { signal: during.signal }),
      batcher.lookup(id('c')),
    ];
    during.abort(new Error('gone while waiting'));
    const settled = await Promise.allSettled(pending);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toEqual(new Error('gone while waiting'));
    // The aborted one was never sent; an already aborted one reached no statement at all.
    expect(sent).toEqual([{ many: ['a', 'c'] }]);
  });

  it('rejects a caller that aborts while its statement runs at once, without waiting for it', async () => {
    let release: (() => void) | undefined;
    const { batcher } = setUp({
      many: (keys) =>
        new Promise((resolve) => {
          release = () => resolve(keys.map((k) => answer(id(k))));
        }),
    });
    const controller = new AbortController();
    const mine = batcher.lookup(id('a'), { signal: controller.signal });
    const other = batcher.lookup(id('b'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(release).toBeDefined(); // the statement is running
    controller.abort(new Error('caller left'));
    await expect(mine).rejects.toThrow('caller left');
    release?.();
    expect(await other).toEqual(answer(id('b')));
  });

  it("looks each identity up alone when the statement fails with an error that is not retryable, so one caller's input fails only its own lookup", async () => {
    const { batcher, sent } = setUp({
      many: async () => {
        throw new IdemError('internal', 'invalid byte sequence');
      },
    });
    const settled = await Promise.allSettled(['a', 'bad-1', 'b'].map((k) => batcher.lookup(id(k))));
    expect(settled[0]).toEqual({ status: 'fulfilled', value: answer(id('a')) });
    expect(settled[1]).toMatchObject({
      status: 'rejected',
      reason: { code: 'internal', message: 'cannot look up bad-1' },
    });
    expect(settled[2]).toEqual({ status: 'fulfilled', value: answer(id('b')) });
    expect(sent).toEqual([{ many: ['a', 'bad-1', 'b'] }, { one: 'a' }, { one: 'bad-1' }, { one: 'b' }]);
  });

  it('treats an answer of the wrong length as a failed statement, never as keys not found', async () => {
    const { batcher, sent } = setUp({ many: async () => [undefined] });
    const found = await Promise.all(['a', 'b'].map((k) => batcher.lookup(id(k))));
    expect(found).toEqual([answer(id('a')), answer(id('b'))]);
    expect(sent.slice(1)).toEqual([{ one: 'a' }, { one: 'b' }]);
  });

  it('gives every caller of the statement a retryable error (busy, unavailable) as it is, with no lookups alone', async () => {
    const busy = new IdemError('busy', 'lock wait ran out', { retryAfterMs: 50 });
    const { batcher, sent } = setUp({
      many: async () => {
        throw busy;
      },
    });
    const settled = await Promise.allSettled(['a', 'b', 'c'].map((k) => batcher.lookup(id(k))));
    expect(settled).toEqual([0, 1, 2].map(() => ({ status: 'rejected', reason: busy })));
    expect(sent).toEqual([{ many: ['a', 'b', 'c'] }]);
  });

  it('starts a new statement for lookups that come while one runs', async () => {
    const { batcher, sent, gates } = setUp();
    const first = batcher.lookup(id('slow-1'));
    await new Promise((resolve) => setImmediate(resolve));
    const later = await Promise.all([batcher.lookup(id('a')), batcher.lookup(id('b'))]);
    expect(later).toEqual([answer(id('a')), answer(id('b'))]);
    gates.forEach((open) => open());
    expect(await first).toEqual(answer(id('slow-1')));
    expect(sent).toEqual([{ one: 'slow-1' }, { many: ['a', 'b'] }]);
  });

  describe('firstAtOnce (SQLite)', () => {
    it('reads a lookup at once when none is under way, before the turn ends', async () => {
      const { batcher, sent } = setUp({ firstAtOnce: true });
      const found = batcher.lookup(id('a'));
      // Sent within the call itself: no wait for the turn's end.
      expect(sent).toEqual([{ one: 'a' }]);
      expect(await found).toEqual(answer(id('a')));
      // Once its answer reached the caller, the next one is read at once again.
      const next = batcher.lookup(id('b'));
      expect(sent).toEqual([{ one: 'a' }, { one: 'b' }]);
      expect(await next).toEqual(answer(id('b')));
    });

    it('makes lookups that come while one is under way wait for each other, to the turn’s end', async () => {
      const { batcher, sent } = setUp({ firstAtOnce: true });
      const keys = ['a', 'b', 'absent-1', 'c'];
      const pending = keys.map((k) => batcher.lookup(id(k)));
      expect(sent).toEqual([{ one: 'a' }]);
      const found = await Promise.all(pending);
      expect(sent).toEqual([{ one: 'a' }, { many: ['b', 'absent-1', 'c'] }]);
      expect(found).toEqual(keys.map((k) => answer(id(k))));
    });

    it('counts a lookup under way until its answer is given, also when it fails', async () => {
      const { batcher, sent } = setUp({ firstAtOnce: true });
      await expect(batcher.lookup(id('bad-1'))).rejects.toMatchObject({ code: 'internal' });
      const after = batcher.lookup(id('a'));
      expect(sent).toEqual([{ one: 'bad-1' }, { one: 'a' }]);
      expect(await after).toEqual(answer(id('a')));
    });
  });
});
