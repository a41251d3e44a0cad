import { describe, expect, it, onTestFinished } from 'vitest';
import type { JsonObject } from '../../packages/idem/src/core/json.js';
import type { OutboxMessage } from '../../packages/idem/src/core/operation-record.js';
import type { CallOutcome, IdempotentOperation } from '../../packages/idem/src/executor/executor.js';
import type { EffectContext } from '../../packages/idem/src/executor/effect.js';
import type { OutboxIntent } from '../../packages/idem/src/ports/receipt-store.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { storeFactories, type NoteArgs, type TestStore } from '../helpers/store-fixtures.js';

const LEASE_MS = 10_000;
const YEAR = 365 * 24 * 60 * 60 * 1000;
const DESTINATION = 'webhook:notes';

type Success = Extract<CallOutcome, { ok: true }>;
type Failure = Extract<CallOutcome, { ok: false }>;

function succeeded(outcome: CallOutcome): Success {
  if (!outcome.ok) throw new Error(`expected success, got ${outcome.error.code}: ${outcome.error.message}`);
  return outcome;
}

function failed(outcome: CallOutcome): Failure {
  if (outcome.ok) throw new Error(`expected a failure, got ${JSON.stringify(outcome.result)}`);
  return outcome;
}

function intent(dedupKey: string, payload: JsonObject = { dedup: dedupKey }): OutboxIntent {
  return { destination: DESTINATION, dedupKey, payload };
}

/**
 * Runs `steps` in order: synchronously while they are synchronous (SQLite effects must be), chained
 * once one returns a promise (stores whose `enqueue` is asynchronous).
 */
function sequence(steps: ReadonlyArray<() => void | Promise<void>>): void | Promise<void> {
  for (const [index, step] of steps.entries()) {
    const result = step();
    if (result instanceof Promise) return result.then(() => sequence(steps.slice(index + 1)));
  }
  return undefined;
}

for (const factory of storeFactories) {
  describe(`outbox contract: ${factory.name}`, () => {
    interface Box {
      readonly t: TestStore;
      readonly clock: FakeClock;
    }

    async function open(): Promise<Box> {
      const clock = new FakeClock();
      const t = await factory.create({ clock });
      onTestFinished(() => t.close());
      return { t, clock };
    }

    /** `create_note` whose effect writes the note, enqueues `intents`, then runs `after` (may throw). */
    function enqueuing(
      t: TestStore,
      intents: readonly OutboxIntent[],
      after?: () => void,
    ): IdempotentOperation<unknown, NoteArgs> {
      return t.noteOperation({
        afterInsert: (context: EffectContext) =>
          sequence([
            ...intents.map((i) => () => context.enqueue(i)),
            ...(after === undefined ? [] : [after]),
          ]),
      });
    }

    function call(t: TestStore, key: string, operation: IdempotentOperation<unknown, NoteArgs>) {
      return t.executor.run(operation, { principal: 'alice', workspace: 'ws-1', key, args: { body: key } });
    }

    function claim(b: Box, workerId: string, limit = 10): Promise<OutboxMessage[]> {
      return b.t.store.outbox.claim({ workerId, now: b.clock.now(), leaseMs: LEASE_MS, limit });
    }

    async function counts(t: TestStore) {
      return { notes: await t.countNotes(), receipts: await t.countReceipts() };
    }

    describe('commits and rolls back with the effect', () => {
      it('makes a message enqueued by a committed effect claimable, exactly as enqueued', async () => {
        const b = await open();
        const now = b.clock.now();
        succeeded(await call(b.t, 'key-1', enqueuing(b.t, [intent('note-1', { note: 'n1', n: 1 })])));

        const messages = await claim(b, 'd1');
        expect(messages).toEqual([
          {
            id: expect.any(Number),
            dedupKey: 'note-1',
            destination: DESTINATION,
            payload: { note: 'n1', n: 1 },
            createdAt: now,
            attempts: 1,
          },
        ]);
      });

      it('leaves no message when the effect throws after enqueueing', async () => {
        const b = await open();
        let failures = 1;
        const flaky = enqueuing(b.t, [intent('note-1')], () => {
          if (failures > 0) {
            failures -= 1;
            throw new Error('downstream exploded');
          }
        });

        expect(failed(await call(b.t, 'key-1', flaky)).error.code).toBe('internal');
        expect(await counts(b.t)).toEqual({ notes: 0, receipts: 0 });
        expect(await claim(b, 'd1')).toEqual([]);
        b.clock.advance(YEAR);
        expect(await claim(b, 'd1')).toEqual([]);

        // The retry executes and enqueues the message once.
        succeeded(await call(b.t, 'key-1', flaky));
        expect((await claim(b, 'd1')).map((m) => [m.dedupKey, m.attempts])).toEqual([['note-1', 1]]);
      });

      for (const point of ['after_effect', 'before_commit'] as const) {
        it(`leaves no message when the transaction fails at ${point}`, async () => {
          const b = await open();
          const op = enqueuing(b.t, [intent('note-1'), intent('note-2')]);
          b.t.faults.arm(point, () => {
            throw new Error(`crash at ${point}`);
          });

          expect(failed(await call(b.t, 'key-1', op)).error.code).toBe('internal');
          expect(await counts(b.t)).toEqual({ notes: 0, receipts: 0 });
          expect(await claim(b, 'd1')).toEqual([]);
          b.clock.advance(YEAR);
          expect(await claim(b, 'd1')).toEqual([]);
        });
      }

      it('keeps the message when only the reply failed after the commit, and a retry adds none', async () => {
        const b = await open();
        const op = enqueuing(b.t, [intent('note-1')]);
        b.t.faults.arm('after_commit', () => {
          throw new Error('crash after commit');
        });

        expect(failed(await call(b.t, 'key-1', op)).error.code).toBe('outcome_unknown');
        expect(await counts(b.t)).toEqual({ notes: 1, receipts: 1 });
        expect(succeeded(await call(b.t, 'key-1', op)).replayed).toBe(true);
        expect((await claim(b, 'd1')).map((m) => m.dedupKey)).toEqual(['note-1']);
      });

      it('enqueues nothing more when a retry replays the receipt', async () => {
        const b = await open();
        const op = enqueuing(b.t, [intent('note-1')]);
        const first = succeeded(await call(b.t, 'key-1', op));
        for (let i = 0; i < 3; i += 1) {
          expect(succeeded(await call(b.t, 'key-1', op)).operationId).toBe(first.operationId);
        }
        expect(await claim(b, 'd1')).toHaveLength(1);
      });

      it('keeps one message per dedupKey, within one effect and across effects', async () => {
        const b = await open();
        succeeded(
          await call(b.t, 'key-1', enqueuing(b.t, [intent('same'), intent('same'), intent('other')])),
        );
        succeeded(await call(b.t, 'key-2', enqueuing(b.t, [intent('same', { second: true })])));
        expect(await counts(b.t)).toEqual({ notes: 2, receipts: 2 });

        const messages = await claim(b, 'd1');
        expect(messages.map((m) => m.dedupKey).sort()).toEqual(['other', 'same']);
        expect(new Set(messages.map((m) => m.id)).size).toBe(2);
        b.clock.advance(LEASE_MS);
        expect(await claim(b, 'd2')).toHaveLength(2);
      });
    });

    describe('leases', () => {
      it('leases a message to one dispatcher; after the lease expires it is sent again with the same dedupKey', async () => {
        const b = await open();
        succeeded(await call(b.t, 'key-1', enqueuing(b.t, [intent('note-1', { note: 'n1' })])));

        const [first, ...rest] = await claim(b, 'd1');
        expect(rest).toEqual([]);
        expect(first?.attempts).toBe(1);
        expect(await claim(b, 'd2')).toEqual([]);
        expect(await claim(b, 'd1')).toEqual([]);
        b.clock.advance(LEASE_MS - 1);
        expect(await claim(b, 'd2')).toEqual([]);

        b.clock.advance(1);
        const again = await claim(b, 'd2');
        expect(again).toEqual([{ ...first, attempts: (first?.attempts ?? 0) + 1 }]);
        expect(again[0]?.dedupKey).toBe('note-1');
        expect(await claim(b, 'd3')).toEqual([]);
      });

      it('never hands out a message again once its holder completed it', async () => {
        const b = await open();
        succeeded(await call(b.t, 'key-1', enqueuing(b.t, [intent('note-1'), intent('note-2')])));
        const claimed = await claim(b, 'd1');
        expect(claimed).toHaveLength(2);
        const done = claimed.find((m) => m.dedupKey === 'note-1');
        await b.t.store.outbox.settle(done?.id ?? -1, 'd1', { kind: 'delivered', at: b.clock.now() });

        b.clock.advance(LEASE_MS);
        expect((await claim(b, 'd2')).map((m) => m.dedupKey)).toEqual(['note-2']);
        b.clock.advance(YEAR);
        expect((await claim(b, 'd3')).map((m) => m.dedupKey)).toEqual(['note-2']);
      });

      it('ignores settle as delivered from a dispatcher that does not hold the lease', async () => {
        const b = await open();
        succeeded(await call(b.t, 'key-1', enqueuing(b.t, [intent('note-1')])));
        const [message] = await claim(b, 'd1');
        const id = message?.id ?? -1;

        await b.t.store.outbox.settle(id, 'd2', { kind: 'delivered', at: b.clock.now() });
        b.clock.advance(LEASE_MS);
        const takenOver = await claim(b, 'd2');
        expect(takenOver.map((m) => [m.id, m.attempts])).toEqual([[id, 2]]);

        // The first dispatcher's lease is gone: its late completion changes nothing either.
        await b.t.store.outbox.settle(id, 'd1', { kind: 'delivered', at: b.clock.now() });
        b.clock.advance(LEASE_MS);
        expect((await claim(b, 'd3')).map((m) => [m.id, m.attempts])).toEqual([[id, 3]]);
      });

      it('hides a message that the holder scheduled for retry until its nextAttemptAt', async () => {
        const b = await open();
        succeeded(await call(b.t, 'key-1', enqueuing(b.t, [intent('note-1')])));
        const [message] = await claim(b, 'd1');
        const retryAt = b.clock.now() + 3 * LEASE_MS;
        await b.t.store.outbox.settle(message?.id ?? -1, 'd1', {
          kind: 'retry',
          at: retryAt,
          error: 'receiver answered 503',
        });

        b.clock.advance(LEASE_MS); // the lease is over, the backoff is not
        expect(await claim(b, 'd2')).toEqual([]);
        b.clock.advance(2 * LEASE_MS - 1);
        expect(await claim(b, 'd2')).toEqual([]);
        b.clock.advance(1);
        const again = await claim(b, 'd2');
        expect(again).toEqual([{ ...message, attempts: 2, lastError: 'receiver answered 503' }]);
      });

      it('ignores settle as retry from a dispatcher that does not hold the lease', async () => {
        const b = await open();
        succeeded(await call(b.t, 'key-1', enqueuing(b.t, [intent('note-1')])));
        const [message] = await claim(b, 'd1');
        await b.t.store.outbox.settle(message?.id ?? -1, 'd2', {
          kind: 'retry',
          at: b.clock.now() + YEAR,
          error: 'not mine',
        });

        expect(await claim(b, 'd2')).toEqual([]);
        b.clock.advance(LEASE_MS);
        expect((await claim(b, 'd2')).map((m) => m.id)).toEqual([message?.id]);
      });

      it('claims at most limit messages and leaves the rest to other dispatchers', async () => {
        const b = await open();
        succeeded(await call(b.t, 'key-1', enqueuing(b.t, [intent('m1'), intent('m2'), intent('m3')])));

        const firstTwo = await claim(b, 'd1', 2);
        expect(firstTwo).toHaveLength(2);
        const last = await claim(b, 'd2', 10);
        expect(last).toHaveLength(1);
        expect([...firstTwo, ...last].map((m) => m.dedupKey).sort()).toEqual(['m1', 'm2', 'm3']);
        expect(await claim(b, 'd3', 10)).toEqual([]);
      });

      it('gives each message to exactly one of many dispatchers on separate connections', async () => {
        const first = await factory.create();
        onTestFinished(() => first.close());
        const connections = [first];
        for (let i = 1; i < 4; i += 1) {
          const t = await factory.create({ path: first.path });
          onTestFinished(() => t.close());
          connections.push(t);
        }
        const intents = Array.from({ length: 12 }, (_, i) => intent(`m${i}`));
        succeeded(await call(first, 'key-1', enqueuing(first, intents)));

        // Wall clock here: the store stamps messages with its own (system) clock.
        const now = (await first.store.ledger.list())[0]?.createdAt ?? 0;
        const batches = await Promise.all(
          connections.map((t, i) =>
            t.store.outbox.claim({ workerId: `d${i}`, now: now + 1, leaseMs: LEASE_MS, limit: 5 }),
          ),
        );
        const keys = batches.flat().map((m) => m.dedupKey);
        expect(keys).toHaveLength(12);
        expect(new Set(keys).size).toBe(12);
      });
    });

    describe('dead letters', () => {
      async function deadLetter(b: Box, key: string, error = 'http_500'): Promise<OutboxMessage> {
        succeeded(await call(b.t, key, enqueuing(b.t, [intent(key)])));
        const [message] = await claim(b, 'd1');
        const id = message?.id ?? -1;
        await b.t.store.outbox.settle(id, 'd1', { kind: 'dead', at: b.clock.now(), error: error });
        const dead = (await b.t.store.outbox.deadLetters()).find((m) => m.id === id);
        if (dead === undefined) throw new Error(`message ${key} is not a dead letter`);
        return dead;
      }

      it('a dead letter is never claimed again and is listed with its last error and when', async () => {
        const b = await open();
        const now = b.clock.now();
        const dead = await deadLetter(b, 'note-1', 'http_422');
        expect(dead).toEqual({
          id: expect.any(Number),
          dedupKey: 'note-1',
          destination: DESTINATION,
          payload: { dedup: 'note-1' },
          createdAt: now,
          attempts: 1,
          lastError: 'http_422',
          deadAt: now,
        });
        b.clock.advance(YEAR);
        expect(await claim(b, 'd2')).toEqual([]);
        expect(await b.t.store.outbox.deadLetters()).toEqual([dead]);
      });

      it('ignores deadLetterOutbox from a dispatcher without the lease, and for a delivered message', async () => {
        const b = await open();
        succeeded(await call(b.t, 'key-1', enqueuing(b.t, [intent('note-1'), intent('note-2')])));
        const [first, second] = await claim(b, 'd1');
        await b.t.store.outbox.settle(first?.id ?? -1, 'd2', {
          kind: 'dead',
          at: b.clock.now(),
          error: 'not mine',
        });
        await b.t.store.outbox.settle(second?.id ?? -1, 'd1', { kind: 'delivered', at: b.clock.now() });
        await b.t.store.outbox.settle(second?.id ?? -1, 'd1', {
          kind: 'dead',
          at: b.clock.now(),
          error: 'too late',
        });
        expect(await b.t.store.outbox.deadLetters()).toEqual([]);
        b.clock.advance(LEASE_MS);
        expect((await claim(b, 'd2')).map((m) => m.id)).toEqual([first?.id]);
      });

      it('requeue makes a dead letter due at once with attempts from 0; anything else is left alone', async () => {
        const b = await open();
        const dead = await deadLetter(b, 'note-1');
        succeeded(await call(b.t, 'key-2', enqueuing(b.t, [intent('note-2')])));
        const [pending] = await claim(b, 'd1');

        b.clock.advance(1000);
        const requeued = await b.t.store.outbox.requeue(dead.id, b.clock.now());
        expect(requeued).toEqual({ ...dead, attempts: 0, deadAt: undefined });
        expect(await b.t.store.outbox.deadLetters()).toEqual([]);
        // Not a dead letter (any more): nothing changes.
        expect(await b.t.store.outbox.requeue(dead.id, b.clock.now())).toBeUndefined();
        expect(await b.t.store.outbox.requeue(pending?.id ?? -1, b.clock.now())).toBeUndefined();
        expect(await b.t.store.outbox.requeue(987_654, b.clock.now())).toBeUndefined();

        const again = await claim(b, 'd2');
        expect(again.map((m) => [m.dedupKey, m.attempts])).toEqual([['note-1', 1]]);
        await b.t.store.outbox.settle(dead.id, 'd2', { kind: 'delivered', at: b.clock.now() });
        b.clock.advance(YEAR);
        expect((await claim(b, 'd3')).map((m) => m.dedupKey)).toEqual(['note-2']);
      });

      it('lists dead letters oldest first, at most limit', async () => {
        const b = await open();
        const first = await deadLetter(b, 'note-1');
        b.clock.advance(10);
        const second = await deadLetter(b, 'note-2');
        b.clock.advance(10);
        const third = await deadLetter(b, 'note-3');
        expect((await b.t.store.outbox.deadLetters()).map((m) => m.id)).toEqual([
          first.id,
          second.id,
          third.id,
        ]);
        expect((await b.t.store.outbox.deadLetters({ limit: 2 })).map((m) => m.id)).toEqual([
          first.id,
          second.id,
        ]);
      });
    });

    describe('sweep', () => {
      const DAY = 24 * 60 * 60 * 1000;
      const sweep = (b: Box, outboxRetentionMs?: number) =>
        b.t.store.housekeeping.sweep({
          now: b.clock.now(),
          tombstoneTtlMs: YEAR,
          batchSize: 2,
          ...(outboxRetentionMs === undefined ? {} : { outboxRetentionMs }),
        });
      const stored = async (b: Box) => {
        b.clock.advance(YEAR);
        const left = [...(await claim(b, `sweep-${b.clock.now()}`, 100)).map((m) => m.dedupKey)];
        return left.sort();
      };

      it('deletes messages delivered more than outboxRetentionMs ago, in batches; never pending ones or dead letters', async () => {
        const b = await open();
        const delivered = ['d-1', 'd-2', 'd-3'];
        succeeded(
          await call(
            b.t,
            'key-1',
            enqueuing(
              b.t,
              [...delivered, 'late', 'pending', 'dead'].map((k) => intent(k)),
            ),
          ),
        );
        const claimed = await claim(b, 'd1');
        const byKey = new Map(claimed.map((m) => [m.dedupKey, m.id]));
        for (const key of delivered)
          await b.t.store.outbox.settle(byKey.get(key) ?? -1, 'd1', { kind: 'delivered', at: b.clock.now() });
        await b.t.store.outbox.settle(byKey.get('dead') ?? -1, 'd1', {
          kind: 'dead',
          at: b.clock.now(),
          error: 'http_500',
        });
        await b.t.store.outbox.settle(byKey.get('pending') ?? -1, 'd1', {
          kind: 'retry',
          at: b.clock.now(),
          error: 'http_503',
        });
        b.clock.advance(1);
        await b.t.store.outbox.settle(byKey.get('late') ?? -1, 'd1', {
          kind: 'delivered',
          at: b.clock.now(),
        });

        b.clock.advance(DAY - 1);
        const result = await sweep(b, DAY);
        expect(result).toMatchObject({ outboxDeleted: 3, batches: 2 });
        expect((await sweep(b, DAY)).outboxDeleted).toBe(0);
        b.clock.advance(1);
        expect((await sweep(b, DAY)).outboxDeleted).toBe(1);
        expect((await b.t.store.outbox.deadLetters()).map((m) => m.dedupKey)).toEqual(['dead']);
        expect(await stored(b)).toEqual(['pending']);
      });

      it('keeps delivered messages when no outboxRetentionMs is given', async () => {
        const b = await open();
        succeeded(await call(b.t, 'key-1', enqueuing(b.t, [intent('note-1')])));
        const [message] = await claim(b, 'd1');
        await b.t.store.outbox.settle(message?.id ?? -1, 'd1', { kind: 'delivered', at: b.clock.now() });
        b.clock.advance(YEAR);
        expect((await sweep(b)).outboxDeleted).toBe(0);
        expect(await b.t.store.outbox.requeue(message?.id ?? -1, b.clock.now())).toBeUndefined();
        // Still there: a sweep with a retention finds it.
        expect((await sweep(b, DAY)).outboxDeleted).toBe(1);
      });
    });
  });
}
