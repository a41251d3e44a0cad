import * as assert from 'node:assert/strict';
import type { OutboxMessage } from '../../core/operation-record.js';
import { LEASE_MS, YEAR, defined, same, type Harness } from './harness.js';
import { claimMessages as claim, commitReceipt, intent, type Case } from './receipt-cases.js';

/** Commits one receipt whose transaction enqueues a message per dedup key. */
async function enqueue<Tx>(h: Harness<Tx>, key: string, dedupKeys: readonly string[]): Promise<void> {
  await h.transact(key, (tx) =>
    commitReceipt(
      h,
      tx,
      key,
      dedupKeys.map((k) => intent(k)),
    ),
  );
}

function byKey(messages: readonly OutboxMessage[], dedupKey: string): OutboxMessage {
  return defined(
    messages.find((m) => m.dedupKey === dedupKey),
    `message ${dedupKey}`,
  );
}

async function deadLetter<Tx>(h: Harness<Tx>, key: string, error = 'http_500'): Promise<OutboxMessage> {
  await enqueue(h, key, [key]);
  const message = byKey(await claim(h, 'd1'), key);
  assert.equal(await h.store.outbox.settle(message.id, 'd1', { kind: 'dead', at: h.now, error }), true);
  return defined(
    (await h.store.outbox.deadLetters()).find((m) => m.id === message.id),
    `dead letter ${key}`,
  );
}

/** The outbox: leases, settlements, dead letters. */
export function outboxCases<Tx>(): Array<Case<Tx>> {
  return [
    [
      'outbox.claim: leases a message to one dispatcher, counting an attempt; after the lease expires it is claimed again',
      async (h) => {
        await enqueue(h, 'key-1', ['note-1']);
        const [first, ...rest] = await claim(h, 'd1');
        same(rest, []);
        assert.equal(first?.attempts, 1);
        same(await claim(h, 'd2'), []);
        same(await claim(h, 'd1'), [], 'not even the holder twice');
        h.advance(LEASE_MS - 1);
        same(await claim(h, 'd2'), []);
        h.advance(1);
        const again = await claim(h, 'd2');
        same(again, [{ ...first, attempts: (first?.attempts ?? 0) + 1 }]);
        same(await claim(h, 'd3'), []);
      },
    ],
    [
      'outbox.claim: at most limit messages, oldest id first; the rest go to other dispatchers',
      async (h) => {
        await enqueue(h, 'key-1', ['m1', 'm2', 'm3']);
        await enqueue(h, 'key-2', ['m4']);
        const firstTwo = await claim(h, 'd1', 2);
        assert.equal(firstTwo.length, 2);
        const last = await claim(h, 'd2', 10);
        assert.equal(last.length, 2);
        const all = [...firstTwo, ...last];
        same(
          all.map((m) => m.id),
          [...all.map((m) => m.id)].sort((a, b) => a - b),
          'oldest id first',
        );
        assert.equal(
          byKey(last, 'm4').id,
          Math.max(...all.map((m) => m.id)),
          'the later transaction has the later id',
        );
        same(all.map((m) => m.dedupKey).sort(), ['m1', 'm2', 'm3', 'm4']);
        same(await claim(h, 'd3', 10), []);
      },
    ],
    [
      'outbox.claim: concurrent dispatchers each get distinct messages, every message exactly once',
      async (h) => {
        const stores = [h.store];
        for (let i = 1; i < 4; i += 1) stores.push(await h.another());
        await enqueue(
          h,
          'key-1',
          Array.from({ length: 12 }, (_, i) => `m${i}`),
        );
        const batches = await Promise.all(
          stores.map((store, i) =>
            store.outbox.claim({ workerId: `d${i}`, now: h.now, leaseMs: LEASE_MS, limit: 5 }),
          ),
        );
        const keys = batches.flat().map((m) => m.dedupKey);
        assert.equal(keys.length, 12);
        assert.equal(new Set(keys).size, 12);
      },
    ],
    [
      'outbox.settle: delivered by the holder is never handed out again',
      async (h) => {
        await enqueue(h, 'key-1', ['note-1', 'note-2']);
        const claimed = await claim(h, 'd1');
        assert.equal(claimed.length, 2);
        const done = byKey(claimed, 'note-1');
        assert.equal(await h.store.outbox.settle(done.id, 'd1', { kind: 'delivered', at: h.now }), true);
        h.advance(LEASE_MS);
        same(
          (await claim(h, 'd2')).map((m) => m.dedupKey),
          ['note-2'],
        );
        h.advance(YEAR);
        same(
          (await claim(h, 'd3')).map((m) => m.dedupKey),
          ['note-2'],
        );
        assert.equal(
          await h.store.outbox.settle(done.id, 'd1', { kind: 'delivered', at: h.now }),
          false,
          'no lease any more',
        );
      },
    ],
    [
      'outbox.settle: a holder past its lease, not yet taken over, still settles (the send happened)',
      async (h) => {
        await enqueue(h, 'key-1', ['note-1', 'note-2']);
        const claimed = await claim(h, 'd1');
        h.advance(LEASE_MS + 1);
        const sent = byKey(claimed, 'note-1');
        assert.equal(await h.store.outbox.settle(sent.id, 'd1', { kind: 'delivered', at: h.now }), true);
        const later = byKey(claimed, 'note-2');
        assert.equal(
          await h.store.outbox.settle(later.id, 'd1', { kind: 'retry', at: h.now + YEAR, error: 'http_503' }),
          true,
        );
        same(await claim(h, 'd2'), [], 'neither is due: one delivered, one retried a year from now');
      },
    ],
    [
      'outbox.settle: applies only for the lease holder; after a takeover the old holder is refused',
      async (h) => {
        await enqueue(h, 'key-1', ['note-1']);
        const [message] = await claim(h, 'd1');
        const id = defined(message, 'the message').id;
        assert.equal(await h.store.outbox.settle(id, 'd2', { kind: 'delivered', at: h.now }), false);
        h.advance(LEASE_MS);
        same(
          (await claim(h, 'd2')).map((m) => [m.id, m.attempts]),
          [[id, 2]],
        );
        assert.equal(await h.store.outbox.settle(id, 'd1', { kind: 'delivered', at: h.now }), false);
        assert.equal(
          await h.store.outbox.settle(id, 'd1', { kind: 'retry', at: h.now + YEAR, error: 'late' }),
          false,
        );
        assert.equal(
          await h.store.outbox.settle(id, 'd1', { kind: 'dead', at: h.now, error: 'late' }),
          false,
        );
        h.advance(LEASE_MS);
        same(
          (await claim(h, 'd3')).map((m) => [m.id, m.attempts, m.lastError]),
          [[id, 3, undefined]],
        );
        assert.equal(await h.store.outbox.settle(987_654, 'd3', { kind: 'delivered', at: h.now }), false);
      },
    ],
    [
      'outbox.settle: retry hides the message until `at`, with its error; ignored from a non-holder',
      async (h) => {
        await enqueue(h, 'key-1', ['note-1', 'note-2']);
        const claimed = await claim(h, 'd1');
        const message = byKey(claimed, 'note-1');
        const other = byKey(claimed, 'note-2');
        const retryAt = h.now + 3 * LEASE_MS;
        assert.equal(
          await h.store.outbox.settle(message.id, 'd1', {
            kind: 'retry',
            at: retryAt,
            error: 'receiver answered 503',
          }),
          true,
        );
        assert.equal(
          await h.store.outbox.settle(other.id, 'd2', { kind: 'retry', at: h.now + YEAR, error: 'not mine' }),
          false,
        );
        h.advance(LEASE_MS); // the lease is over, the backoff is not
        same(
          (await claim(h, 'd2')).map((m) => m.id),
          [other.id],
        );
        assert.equal(await h.store.outbox.settle(other.id, 'd2', { kind: 'delivered', at: h.now }), true);
        h.advance(2 * LEASE_MS - 1);
        same(await claim(h, 'd3'), []);
        h.advance(1);
        same(await claim(h, 'd3'), [{ ...message, attempts: 2, lastError: 'receiver answered 503' }]);
      },
    ],
    [
      'outbox.settle: dead makes a dead letter, never claimed again, listed with its error and when',
      async (h) => {
        const now = h.now;
        const dead = await deadLetter(h, 'note-1', 'http_422');
        same(dead, {
          id: dead.id,
          dedupKey: 'note-1',
          destination: 'webhook:notes',
          payload: { dedup: 'note-1' },
          createdAt: now,
          attempts: 1,
          lastError: 'http_422',
          deadAt: now,
        });
        h.advance(YEAR);
        same(await claim(h, 'd2'), []);
        same(await h.store.outbox.deadLetters(), [dead]);
      },
    ],
    [
      'outbox.settle: dead is refused from a non-holder and for a delivered or dead message',
      async (h) => {
        await enqueue(h, 'key-1', ['note-1', 'note-2', 'note-3']);
        const claimed = await claim(h, 'd1');
        const [first, second, third] = ['note-1', 'note-2', 'note-3'].map((k) => byKey(claimed, k));
        assert.equal(
          await h.store.outbox.settle(first?.id ?? -1, 'd2', { kind: 'dead', at: h.now, error: 'not mine' }),
          false,
        );
        assert.equal(
          await h.store.outbox.settle(second?.id ?? -1, 'd1', { kind: 'delivered', at: h.now }),
          true,
        );
        assert.equal(
          await h.store.outbox.settle(second?.id ?? -1, 'd1', { kind: 'dead', at: h.now, error: 'too late' }),
          false,
        );
        assert.equal(
          await h.store.outbox.settle(third?.id ?? -1, 'd1', { kind: 'dead', at: h.now, error: 'http_500' }),
          true,
        );
        assert.equal(
          await h.store.outbox.settle(third?.id ?? -1, 'd1', { kind: 'dead', at: h.now + 1, error: 'again' }),
          false,
        );
        same(
          (await h.store.outbox.deadLetters()).map((m) => [m.id, m.lastError, m.deadAt]),
          [[third?.id, 'http_500', h.now]],
        );
        h.advance(LEASE_MS);
        same(
          (await claim(h, 'd2')).map((m) => m.id),
          [first?.id],
        );
      },
    ],
    [
      'outbox.requeue: only a dead letter, due at once with attempts from 0; anything else is left alone',
      async (h) => {
        const dead = await deadLetter(h, 'note-1');
        await enqueue(h, 'key-2', ['note-2']);
        const [pending] = await claim(h, 'd1');
        h.advance(1000);
        const requeued = await h.store.outbox.requeue(dead.id, h.now);
        same(requeued, { ...dead, attempts: 0, deadAt: undefined });
        same(await h.store.outbox.deadLetters(), []);
        assert.equal(await h.store.outbox.requeue(dead.id, h.now), undefined, 'not a dead letter any more');
        assert.equal(await h.store.outbox.requeue(pending?.id ?? -1, h.now), undefined, 'pending');
        assert.equal(await h.store.outbox.requeue(987_654, h.now), undefined, 'unknown');
        const again = await claim(h, 'd2');
        same(
          again.map((m) => [m.dedupKey, m.attempts]),
          [['note-1', 1]],
        );
        assert.equal(await h.store.outbox.settle(dead.id, 'd2', { kind: 'delivered', at: h.now }), true);
        assert.equal(await h.store.outbox.requeue(dead.id, h.now), undefined, 'delivered');
        h.advance(YEAR);
        same(
          (await claim(h, 'd3')).map((m) => m.dedupKey),
          ['note-2'],
        );
      },
    ],
    [
      'outbox.deadLetters: oldest first, at most limit',
      async (h) => {
        const first = await deadLetter(h, 'note-1');
        h.advance(10);
        const second = await deadLetter(h, 'note-2');
        h.advance(10);
        const third = await deadLetter(h, 'note-3');
        same(
          (await h.store.outbox.deadLetters()).map((m) => m.id),
          [first.id, second.id, third.id],
        );
        same(
          (await h.store.outbox.deadLetters({ limit: 2 })).map((m) => m.id),
          [first.id, second.id],
        );
      },
    ],
  ];
}
