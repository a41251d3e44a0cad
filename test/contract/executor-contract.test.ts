import { describe, expect, it, onTestFinished } from 'vitest';
import { decide } from '../../packages/idem/src/core/decide.js';
import { fingerprint } from '../../packages/idem/src/core/fingerprint.js';
import type { OperationIdentity } from '../../packages/idem/src/core/operation-identity.js';
import { DEFAULT_RETENTION_MS, type CallOutcome } from '../../packages/idem/src/executor/executor.js';
import type { CommitOutcome } from '../../packages/idem/src/executor/commit-once.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { storeFactories, type TestStore, type TestStoreOptions } from '../helpers/store-fixtures.js';
import { commitOnce } from '../../packages/idem/src/executor/commit-once.js';

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;

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

for (const factory of storeFactories) {
  describe(`executor contract: ${factory.name}`, () => {
    async function open(options?: TestStoreOptions): Promise<TestStore> {
      const t = await factory.create(options);
      onTestFinished(() => t.close());
      return t;
    }

    function call(
      t: TestStore,
      key: unknown,
      body = 'hello',
      scope: { principal?: string; workspace?: string } = {},
      operation = t.createNote,
    ): Promise<CallOutcome> {
      return t.executor.run(operation, {
        principal: scope.principal ?? 'alice',
        workspace: scope.workspace ?? 'ws-1',
        key,
        args: { body },
      });
    }

    /**
     * Commits create_note for `key` as a caller whose lock-free lookup found nothing (`absent`),
     * though a record or tombstone may exist by now: what a store sees when another call recorded
     * the key between that lookup and this transaction.
     */
    function commitAsIfAbsent(t: TestStore, key: string, body: string, now: number): Promise<CommitOutcome> {
      const identity: OperationIdentity = {
        principal: 'alice',
        workspace: 'ws-1',
        operation: 'create_note',
        version: 1,
        key,
      };
      const operationId = 'op_00000000000000000000000000000042';
      const context = { operationId, attemptId: 'att_00000000000000000000000000000042', identity };
      return commitOnce(t.store.receipts, {
        identity,
        context,
        absent: true,
        decide: (existing) => decide(existing, fingerprint({ body }), now, identity),
        effect: (app, ctx) => t.createNote.effect(app, { body }, ctx),
        receipt: (result) => ({
          operationId,
          identity,
          fingerprint: fingerprint({ body }),
          kind: 'local',
          status: 'succeeded',
          resourceId: result?.resource_id ?? '',
          result: { status: 'succeeded', operation_id: operationId, ...result },
          createdAt: now,
          updatedAt: now,
          expiresAt: now + DEFAULT_RETENTION_MS,
          attemptCount: 1,
          dispatched: false,
        }),
      });
    }

    async function counts(t: TestStore) {
      return {
        notes: await t.countNotes(),
        receipts: await t.countReceipts(),
        tombstones: await t.countTombstones(),
      };
    }

    describe('first call', () => {
      it('executes the effect once and returns the succeeded result with its ids', async () => {
        const t = await open();
        const outcome = succeeded(await call(t, 'key-1', 'first note'));

        expect(outcome.replayed).toBe(false);
        expect(outcome.operationId).toMatch(/^op_[0-9a-f]{32}$/);
        expect(outcome.attemptId).toMatch(/^att_[0-9a-f]{32}$/);
        expect(outcome.result).toEqual({
          status: 'succeeded',
          operation_id: outcome.operationId,
          resource_id: expect.stringMatching(/^note_/),
          note_id: outcome.result.resource_id,
        });
        expect(await counts(t)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });
        expect(await t.listNotes()).toEqual([
          { note_id: outcome.result.resource_id, workspace: 'ws-1', body: 'first note' },
        ]);
      });

      it('stores a receipt that getOperation returns', async () => {
        const t = await open();
        const outcome = succeeded(await call(t, 'key-1'));
        const receipt = await t.store.ledger.get(outcome.operationId);
        expect(receipt).toMatchObject({
          operationId: outcome.operationId,
          identity: {
            principal: 'alice',
            workspace: 'ws-1',
            operation: 'create_note',
            version: 1,
            key: 'key-1',
          },
          status: 'succeeded',
          resourceId: outcome.result.resource_id,
          result: outcome.result,
        });
        expect(receipt?.fingerprint).toMatch(/^[0-9a-f]{64}$/);
        expect(receipt?.expiresAt).toBe((receipt?.createdAt ?? 0) + DEFAULT_RETENTION_MS);
      });
    });

    describe('retries', () => {
      it('replays the identical stored result for the same key and arguments, without a second effect', async () => {
        const t = await open();
        const first = succeeded(await call(t, 'key-1'));
        const second = succeeded(await call(t, 'key-1'));
        const third = succeeded(await call(t, 'key-1'));

        for (const retry of [second, third]) {
          expect(retry.replayed).toBe(true);
          expect(retry.operationId).toBe(first.operationId);
          expect(retry.result).toEqual(first.result);
          expect(retry.attemptId).not.toBe(first.attemptId);
        }
        expect(await counts(t)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });
      });

      it('gives a caller that lost the first response the same ids on retry', async () => {
        const t = await open();
        await call(t, 'lost-key', 'body'); // the response never reaches the caller
        const retry = succeeded(await call(t, 'lost-key', 'body'));

        expect(retry.replayed).toBe(true);
        const [note] = await t.listNotes();
        expect(retry.result.resource_id).toBe(note?.note_id);
        const [receipt] = await t.store.ledger.list();
        expect(retry.operationId).toBe(receipt?.operationId);
        expect(await counts(t)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });
      });

      it('rejects the same key with other arguments as payload_conflict and changes nothing', async () => {
        const t = await open();
        const first = succeeded(await call(t, 'key-1', 'original'));
        const conflict = failed(await call(t, 'key-1', 'different'));

        expect(conflict.error.code).toBe('payload_conflict');
        expect(conflict.error.retryable).toBe(false);
        expect(await counts(t)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });
        expect((await t.listNotes()).map((n) => n.body)).toEqual(['original']);
        // The original still replays after the conflict.
        const retry = succeeded(await call(t, 'key-1', 'original'));
        expect(retry.operationId).toBe(first.operationId);
      });
    });

    describe('concurrency', () => {
      it('runs the effect once for 8 concurrent calls with one key through 8 connections', async () => {
        const first = await open();
        const connections = [first];
        for (let i = 1; i < 8; i += 1) connections.push(await open({ path: first.path }));

        const outcomes = (
          await Promise.all(connections.map((t) => call(t, 'shared-key', 'once', {}, first.createNote)))
        ).map(succeeded);

        expect(await counts(first)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });
        expect(outcomes.filter((o) => !o.replayed)).toHaveLength(1);
        const [note] = await first.listNotes();
        for (const outcome of outcomes) {
          expect(outcome.operationId).toBe(outcomes[0]?.operationId);
          expect(outcome.result).toEqual(outcomes[0]?.result);
          expect(outcome.result.resource_id).toBe(note?.note_id);
        }
      });

      it('runs the effect once for 12 concurrent calls with one key on one connection', async () => {
        const t = await open();
        const outcomes = (await Promise.all(Array.from({ length: 12 }, () => call(t, 'k')))).map(succeeded);
        expect(await counts(t)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });
        expect(outcomes.filter((o) => !o.replayed)).toHaveLength(1);
        expect(new Set(outcomes.map((o) => o.operationId)).size).toBe(1);
      });

      it('answers concurrent calls of one key from the first one’s commit, each with a result of its own', async () => {
        const t = await open();
        // Only the first call reads the key; the 19 others are answered from what it committed.
        const receipts = t.store.receipts;
        const lookup = receipts.lookup.bind(receipts);
        let lookups = 0;
        receipts.lookup = (...args) => {
          lookups += 1;
          return lookup(...args);
        };
        onTestFinished(() => {
          receipts.lookup = lookup;
        });
        const outcomes = (await Promise.all(Array.from({ length: 20 }, () => call(t, 'storm')))).map(
          succeeded,
        );
        expect(lookups).toBe(1);
        const executed = outcomes.filter((o) => !o.replayed);
        expect(executed).toHaveLength(1);
        expect(await counts(t)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });
        const [note] = await t.listNotes();
        for (const outcome of outcomes) {
          expect(outcome.result).toEqual(executed[0]?.result);
          expect(outcome.result.resource_id).toBe(note?.note_id);
        }
        expect(new Set(outcomes.map((o) => o.attemptId)).size).toBe(20);
        const kept = structuredClone(executed[0]?.result);
        // No two callers share a result object: one caller's changes reach no other.
        (outcomes.find((o) => o.replayed)?.result as Record<string, unknown>).resource_id = 'changed';
        expect(outcomes.filter((o) => o.result.resource_id === 'changed')).toHaveLength(1);
        // A later retry reads the record anew and gets the same answer.
        expect(succeeded(await call(t, 'storm')).result).toEqual(kept);
      });

      it('refuses a concurrent call of the key with other arguments as payload_conflict', async () => {
        const t = await open();
        const [first, ...others] = await Promise.all([
          call(t, 'storm', 'original'),
          call(t, 'storm', 'different'),
          call(t, 'storm', 'original'),
          call(t, 'storm', 'different'),
        ]);
        expect(succeeded(first as CallOutcome).replayed).toBe(false);
        expect(others.map((o) => (o.ok ? (o.replayed ? 'replayed' : 'executed') : o.error.code))).toEqual([
          'payload_conflict',
          'replayed',
          'payload_conflict',
        ]);
        expect((await t.listNotes()).map((n) => n.body)).toEqual(['original']);
      });

      it('lets concurrent calls of one key go their own way when the first one fails: one executes', async () => {
        const t = await open();
        let runs = 0;
        const flaky = {
          ...t.createNote,
          effect: (app: never, args: { body: string }, ctx: never) => {
            runs += 1;
            if (runs === 1) throw new Error('the first run fails');
            return t.createNote.effect(app, args, ctx);
          },
        } as typeof t.createNote;
        const outcomes = await Promise.all(Array.from({ length: 6 }, () => call(t, 'storm', 'b', {}, flaky)));
        const labels = outcomes.map((o) => (o.ok ? (o.replayed ? 'replayed' : 'executed') : o.error.code));
        expect(labels.filter((l) => l === 'internal')).toHaveLength(1);
        expect(labels.filter((l) => l === 'executed')).toHaveLength(1);
        expect(labels.filter((l) => l === 'replayed')).toHaveLength(4);
        expect(runs).toBe(2);
        expect(await counts(t)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });
      });

      it('answers aborted to a concurrent call of the key whose signal aborts, and the first one commits', async () => {
        const t = await open();
        const controller = new AbortController();
        const first = call(t, 'storm');
        const follower = t.executor.run(t.createNote, {
          principal: 'alice',
          workspace: 'ws-1',
          key: 'storm',
          args: { body: 'hello' },
          signal: controller.signal,
        });
        controller.abort();
        expect(failed(await follower).error.code).toBe('aborted');
        expect(succeeded(await first).replayed).toBe(false);
        expect(await counts(t)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });
      });

      it('never writes over a record made since the caller looked: the effect is undone, the record replays', async () => {
        const t = await open();
        const first = succeeded(await call(t, 'raced', 'same body'));
        const outcome = await commitAsIfAbsent(t, 'raced', 'same body', Date.now());
        expect(outcome.kind).toBe('decided');
        if (outcome.kind !== 'decided' || outcome.decision.kind !== 'replay')
          throw new Error('expected a replay');
        expect(outcome.decision.receipt.operationId).toBe(first.operationId);
        expect(await counts(t)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });
        expect((await t.store.ledger.get(first.operationId))?.result).toEqual(first.result);
      });

      it('never runs a key made tombstone since the caller looked: the effect is undone, key_expired', async () => {
        const clock = new FakeClock();
        const t = await open({ clock });
        succeeded(await call(t, 'raced', 'same body'));
        clock.advance(DEFAULT_RETENTION_MS + HOUR);
        await t.store.housekeeping.sweep({ now: clock.now(), tombstoneTtlMs: 7 * DAY, batchSize: 10 });
        const outcome = await commitAsIfAbsent(t, 'raced', 'same body', clock.now());
        if (outcome.kind !== 'decided' || outcome.decision.kind !== 'reject')
          throw new Error('expected a refusal');
        expect(outcome.decision.error.code).toBe('key_expired');
        expect(await counts(t)).toEqual({ notes: 1, receipts: 0, tombstones: 1 });
      });

      it('executes every one of many concurrent calls with distinct keys', async () => {
        const t = await open();
        const outcomes = (
          await Promise.all(Array.from({ length: 10 }, (_, i) => call(t, `key-${i}`, `body-${i}`)))
        ).map(succeeded);
        expect(outcomes.every((o) => !o.replayed)).toBe(true);
        expect(new Set(outcomes.map((o) => o.operationId)).size).toBe(10);
        expect(await counts(t)).toEqual({ notes: 10, receipts: 10, tombstones: 0 });
      });
    });

    describe('scope', () => {
      it('keeps the same key of another principal independent', async () => {
        const t = await open();
        const alice = succeeded(await call(t, 'key-1', 'same', { principal: 'alice' }));
        const bob = succeeded(await call(t, 'key-1', 'same', { principal: 'bob' }));

        expect(bob.replayed).toBe(false);
        expect(bob.operationId).not.toBe(alice.operationId);
        expect(bob.result.resource_id).not.toBe(alice.result.resource_id);
        expect(await counts(t)).toEqual({ notes: 2, receipts: 2, tombstones: 0 });
        // Each principal replays its own result.
        expect(succeeded(await call(t, 'key-1', 'same', { principal: 'alice' })).operationId).toBe(
          alice.operationId,
        );
        expect(succeeded(await call(t, 'key-1', 'same', { principal: 'bob' })).operationId).toBe(
          bob.operationId,
        );
      });

      it('keeps the same key in another workspace independent', async () => {
        const t = await open();
        const one = succeeded(await call(t, 'key-1', 'same', { workspace: 'ws-1' }));
        const two = succeeded(await call(t, 'key-1', 'other args are fine too', { workspace: 'ws-2' }));
        expect(two.replayed).toBe(false);
        expect(two.operationId).not.toBe(one.operationId);
        expect((await t.listNotes()).map((n) => n.workspace).sort()).toEqual(['ws-1', 'ws-2']);
      });
    });

    describe('authorization', () => {
      it('asks authorize with the principal, workspace and operation name', async () => {
        const asked: unknown[] = [];
        const t = await open({
          authorize: (principal, workspace, context) => {
            asked.push([principal, workspace, context]);
            return true;
          },
        });
        succeeded(await call(t, 'key-1', 'x', { principal: 'carol', workspace: 'ws-9' }));
        expect(asked).toEqual([['carol', 'ws-9', { operation: 'create_note' }]]);
      });

      it('refuses a replay once the principal lost access, and never-seen keys too', async () => {
        let allowed = true;
        const t = await open({ authorize: async () => allowed });
        const first = succeeded(await call(t, 'key-1'));

        allowed = false;
        const replay = failed(await call(t, 'key-1'));
        expect(replay.error.code).toBe('forbidden');
        expect(replay.error.retryable).toBe(false);
        expect(JSON.stringify(replay)).not.toContain(first.result.resource_id as string);
        const fresh = failed(await call(t, 'never-seen'));
        expect(fresh.error.code).toBe('forbidden');
        expect(await counts(t)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });

        allowed = true;
        expect(succeeded(await call(t, 'key-1')).operationId).toBe(first.operationId);
      });

      it('turns a throwing authorize into internal without running the effect', async () => {
        const t = await open({
          authorize: () => {
            throw new Error('auth backend down');
          },
        });
        expect(failed(await call(t, 'key-1')).error.code).toBe('internal');
        expect(await counts(t)).toEqual({ notes: 0, receipts: 0, tombstones: 0 });
      });
    });

    describe('expiry and sweep', () => {
      it('replays until the retention ends, then answers key_expired without a second effect', async () => {
        const clock = new FakeClock();
        const t = await open({ clock });
        const first = succeeded(await call(t, 'key-1'));

        clock.advance(DEFAULT_RETENTION_MS - 1);
        expect(succeeded(await call(t, 'key-1')).operationId).toBe(first.operationId);

        clock.advance(1);
        const expired = failed(await call(t, 'key-1'));
        expect(expired.error.code).toBe('key_expired');
        expect(expired.error.retryable).toBe(false);
        expect(failed(await call(t, 'key-1', 'other args')).error.code).toBe('key_expired');
        expect(await counts(t)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });
      });

      it("honours an operation's own retentionMs", async () => {
        const clock = new FakeClock();
        const t = await open({ clock });
        const op = t.noteOperation({ retentionMs: 1000 });
        succeeded(await call(t, 'key-1', 'b', {}, op));
        clock.advance(999);
        expect(succeeded(await call(t, 'key-1', 'b', {}, op)).replayed).toBe(true);
        clock.advance(1);
        expect(failed(await call(t, 'key-1', 'b', {}, op)).error.code).toBe('key_expired');
      });

      it('tombstones an expired receipt, refuses the key while the tombstone lives, then frees it', async () => {
        const clock = new FakeClock();
        const t = await open({ clock });
        const tombstoneTtlMs = 7 * DAY;
        const receiptExpiresAt = clock.now() + DEFAULT_RETENTION_MS;
        const first = succeeded(await call(t, 'key-1'));

        // Nothing is due yet.
        expect(await t.store.housekeeping.sweep({ now: clock.now(), tombstoneTtlMs, batchSize: 10 })).toEqual(
          {
            tombstoned: 0,
            tombstonesDeleted: 0,
            outboxDeleted: 0,
            batches: 0,
          },
        );
        expect(await counts(t)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });

        clock.advance(DEFAULT_RETENTION_MS + HOUR);
        const swept = await t.store.housekeeping.sweep({ now: clock.now(), tombstoneTtlMs, batchSize: 10 });
        expect(swept).toMatchObject({ tombstoned: 1, tombstonesDeleted: 0 });
        expect(await counts(t)).toEqual({ notes: 1, receipts: 0, tombstones: 1 });
        expect(await t.store.ledger.get(first.operationId)).toBeUndefined();
        const refusal = failed(await call(t, 'key-1')).error;
        expect(refusal.code).toBe('key_expired');
        // The refusal says when the receipt expired, as the tombstone recorded it.
        expect(refusal.message).toContain(new Date(receiptExpiresAt).toISOString());
        expect(failed(await call(t, 'key-1', 'other args')).error.code).toBe('key_expired');

        // The tombstone lives tombstoneTtlMs past the receipt's expiry, not past the sweep.
        clock.advance(tombstoneTtlMs - HOUR - 1);
        expect(
          await t.store.housekeeping.sweep({ now: clock.now(), tombstoneTtlMs, batchSize: 10 }),
        ).toMatchObject({
          tombstonesDeleted: 0,
        });
        expect(failed(await call(t, 'key-1')).error.code).toBe('key_expired');

        clock.advance(1);
        expect(
          await t.store.housekeeping.sweep({ now: clock.now(), tombstoneTtlMs, batchSize: 10 }),
        ).toMatchObject({
          tombstoned: 0,
          tombstonesDeleted: 1,
        });
        expect(await counts(t)).toEqual({ notes: 1, receipts: 0, tombstones: 0 });

        const anew = succeeded(await call(t, 'key-1'));
        expect(anew.replayed).toBe(false);
        expect(anew.operationId).not.toBe(first.operationId);
        expect(await counts(t)).toEqual({ notes: 2, receipts: 1, tombstones: 0 });
      });

      it('runs a key anew once its tombstone expired, even before a sweep removed it', async () => {
        const clock = new FakeClock();
        const t = await open({ clock });
        const op = t.noteOperation({ retentionMs: HOUR });
        const first = succeeded(await call(t, 'key-1', 'b', {}, op));
        clock.advance(HOUR);
        await t.store.housekeeping.sweep({ now: clock.now(), tombstoneTtlMs: HOUR, batchSize: 10 });
        expect(await counts(t)).toEqual({ notes: 1, receipts: 0, tombstones: 1 });

        clock.advance(HOUR);
        const anew = succeeded(await call(t, 'key-1', 'new args', {}, op));
        expect(anew.replayed).toBe(false);
        expect(anew.operationId).not.toBe(first.operationId);
        expect(await counts(t)).toEqual({ notes: 2, receipts: 1, tombstones: 0 });
        expect(succeeded(await call(t, 'key-1', 'new args', {}, op)).operationId).toBe(anew.operationId);
      });

      it('sweeps in batches until nothing is due', async () => {
        const clock = new FakeClock();
        const t = await open({ clock });
        const op = t.noteOperation({ retentionMs: HOUR });
        for (let i = 0; i < 25; i += 1) succeeded(await call(t, `key-${i}`, `body-${i}`, {}, op));
        clock.advance(HOUR);

        const swept = await t.store.housekeeping.sweep({
          now: clock.now(),
          tombstoneTtlMs: DAY,
          batchSize: 10,
        });
        expect(swept.tombstoned).toBe(25);
        expect(swept.tombstonesDeleted).toBe(0);
        expect(swept.batches).toBeGreaterThanOrEqual(3);
        expect(await counts(t)).toEqual({ notes: 25, receipts: 0, tombstones: 25 });
        for (let i = 0; i < 25; i += 5) {
          expect(failed(await call(t, `key-${i}`, `body-${i}`, {}, op)).error.code).toBe('key_expired');
        }
      });

      it('sizes each batch by how long the last ones took where a batch blocks callers (batchBudgetMs)', async () => {
        const clock = new FakeClock();
        const t = await open({ clock });
        const op = t.noteOperation({ retentionMs: HOUR });
        for (let i = 0; i < 25; i += 1) succeeded(await call(t, `key-${i}`, `body-${i}`, {}, op));
        clock.advance(HOUR);
        // On the fake clock no time passes inside a batch: every batch takes the whole batchSize.
        const fast = await t.store.housekeeping.sweep({
          now: clock.now(),
          tombstoneTtlMs: DAY,
          batchSize: 10,
        });
        expect(fast).toEqual({ tombstoned: 25, tombstonesDeleted: 0, outboxDeleted: 0, batches: 3 });

        const slowClock = new FakeClock();
        let ticks = 0;
        const slow = await open({
          clock: {
            now: () => slowClock.now(),
            sleep: (ms, options) => slowClock.sleep(ms, options),
            // Every reading is a millisecond later: each batch looks far over a 1 µs budget.
            monotonic: () => (ticks += 1),
          },
        });
        for (let i = 0; i < 60; i += 1) succeeded(await call(slow, `key-${i}`, `body-${i}`, {}, op));
        slowClock.advance(HOUR);
        const halved = await slow.store.housekeeping.sweep({
          now: slowClock.now(),
          tombstoneTtlMs: DAY,
          batchSize: 40,
          batchBudgetMs: 0.001,
          maxDuty: 1, // no pauses: this fake clock's sleeps wait for advance()
        });
        // SQLite (a batch holds the single write lock): 32, then 16, 12: over budget, each batch is
        // half the last, but never under 16 rows (MIN_SWEEP_BATCH_ROWS, or a loaded machine would
        // sweep a row at a time). PostgreSQL (a batch locks only its own rows): 40, 20.
        const batches = factory.name.endsWith('sqlite') ? 3 : 2;
        expect(halved).toEqual({ tombstoned: 60, tombstonesDeleted: 0, outboxDeleted: 0, batches });
        expect(await counts(slow)).toEqual({ notes: 60, receipts: 0, tombstones: 60 });
      });

      it('waits between batches where a batch blocks callers, so batches fill at most maxDuty of the time', async () => {
        const base = new FakeClock();
        let ticks = 0;
        const pauses: number[] = [];
        const t = await open({
          clock: {
            now: () => base.now(),
            // Every reading is a millisecond later, so every batch takes some time.
            monotonic: () => (ticks += 1),
            sleep: (ms, options) => {
              pauses.push(ms);
              return base.sleep(0, options);
            },
          },
        });
        const op = t.noteOperation({ retentionMs: HOUR });
        for (let i = 0; i < 25; i += 1) succeeded(await call(t, `key-${i}`, `body-${i}`, {}, op));
        base.advance(HOUR);
        pauses.length = 0;
        const quarter = await t.store.housekeeping.sweep({
          now: base.now(),
          tombstoneTtlMs: DAY,
          batchSize: 10,
          maxDuty: 0.25,
        });
        expect(quarter.tombstoned).toBe(25);
        if (factory.name.endsWith('sqlite')) {
          // After each batch that moved rows: three times as long as the batch took.
          expect(pauses).toHaveLength(quarter.batches);
          for (const ms of pauses) expect(ms).toBeGreaterThanOrEqual(3);
          for (const ms of pauses) expect(ms % 3).toBe(0);
        } else {
          expect(pauses).toEqual([]); // PostgreSQL: a batch locks only its own rows
        }
        for (let i = 0; i < 25; i += 1) succeeded(await call(t, `late-${i}`, `body-${i}`, {}, op));
        base.advance(HOUR);
        pauses.length = 0;
        expect(
          (
            await t.store.housekeeping.sweep({
              now: base.now(),
              tombstoneTtlMs: DAY,
              batchSize: 10,
              maxDuty: 1,
            })
          ).tombstoned,
        ).toBe(25);
        expect(pauses).toEqual([]);
        await expect(
          t.store.housekeeping.sweep({ now: base.now(), tombstoneTtlMs: DAY, batchSize: 10, maxDuty: 0 }),
        ).rejects.toMatchObject({ code: 'invalid_argument' });
      });

      it('stops after maxBatches and leaves only due receipts to later sweeps', async () => {
        const clock = new FakeClock();
        const t = await open({ clock });
        const shortLived = t.noteOperation({ retentionMs: HOUR });
        for (let i = 0; i < 15; i += 1) succeeded(await call(t, `old-${i}`, 'b', {}, shortLived));
        clock.advance(HOUR);
        const live = succeeded(await call(t, 'live', 'b', {}, shortLived));

        const partial = await t.store.housekeeping.sweep({
          now: clock.now(),
          tombstoneTtlMs: DAY,
          batchSize: 10,
          maxBatches: 1,
        });
        expect(partial).toEqual({ tombstoned: 10, tombstonesDeleted: 0, outboxDeleted: 0, batches: 1 });
        expect(await counts(t)).toEqual({ notes: 16, receipts: 6, tombstones: 10 });

        const rest = await t.store.housekeeping.sweep({
          now: clock.now(),
          tombstoneTtlMs: DAY,
          batchSize: 10,
        });
        expect(rest.tombstoned).toBe(5);
        expect(await counts(t)).toEqual({ notes: 16, receipts: 1, tombstones: 15 });
        expect((await t.store.ledger.get(live.operationId))?.operationId).toBe(live.operationId);
      });
    });

    describe('operation version', () => {
      it('never executes a key of version 1 again under version 2: refused, or replayed where version 2 answers for it', async () => {
        const t = await open();
        const v1 = t.noteOperation({ version: 1 });
        const v2 = t.noteOperation({ version: 2 });
        const v2ReplaysV1 = { ...t.noteOperation({ version: 2 }), replaysVersions: [1] };
        const first = succeeded(await call(t, 'key-1', 'b', {}, v1));

        const refused = failed(await call(t, 'key-1', 'b', {}, v2));
        expect(refused.error.code).toBe('version_conflict');
        expect(refused.error.retryable).toBe(false);
        expect(refused.error.operationId).toBe(first.operationId);
        expect(refused.error.message).toContain('create_note@v1');
        expect(refused.error.message).toContain(first.operationId);
        expect(failed(await call(t, 'key-1', 'other', {}, v2)).error.code).toBe('version_conflict');
        expect(await counts(t)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });

        const replay = succeeded(await call(t, 'key-1', 'b', {}, v2ReplaysV1));
        expect(replay.replayed).toBe(true);
        expect(replay.operationId).toBe(first.operationId);
        expect(replay.result).toEqual(first.result);
        expect(failed(await call(t, 'key-1', 'other', {}, v2ReplaysV1)).error.code).toBe('payload_conflict');
        expect(succeeded(await call(t, 'key-1', 'b', {}, v1)).result).toEqual(first.result);
        expect(await counts(t)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });

        // A new key runs under version 2; version 1 does not answer for it.
        const fresh = succeeded(await call(t, 'key-2', 'b', {}, v2));
        expect(fresh.replayed).toBe(false);
        expect((await t.store.ledger.get(fresh.operationId))?.identity.version).toBe(2);
        expect(failed(await call(t, 'key-2', 'b', {}, v1)).error.code).toBe('version_conflict');
        expect(await counts(t)).toEqual({ notes: 2, receipts: 2, tombstones: 0 });
      });

      it('runs one effect when calls with one key at versions 1 and 2 race', async () => {
        const t = await open();
        const ops = [t.noteOperation({ version: 1 }), t.noteOperation({ version: 2 })];
        const outcomes = await Promise.all(
          Array.from({ length: 6 }, (_, i) => call(t, 'key-1', 'b', {}, ops[i % 2])),
        );
        const executed = outcomes.filter((o) => o.ok && !o.replayed);
        expect(executed).toHaveLength(1);
        const winner = executed[0]?.ok === true ? executed[0].operationId : undefined;
        const version = (await t.store.ledger.get(String(winner)))?.identity.version;
        outcomes.forEach((o, i) => {
          if (o.ok) expect(o.operationId).toBe(winner);
          if (i % 2 === Number(version) - 1) expect(o.ok).toBe(true);
          else expect(o.ok ? 'ok' : o.error.code).toBe('version_conflict');
        });
        expect(await counts(t)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });
      });

      it('refuses the tombstone of an unlisted version with version_conflict, and a listed one with key_expired', async () => {
        const clock = new FakeClock();
        const t = await open({ clock });
        const v1 = t.noteOperation({ version: 1, retentionMs: HOUR });
        succeeded(await call(t, 'key-1', 'b', {}, v1));
        clock.advance(HOUR);
        await t.store.housekeeping.sweep({ now: clock.now(), tombstoneTtlMs: DAY, batchSize: 10 });
        const refused = failed(await call(t, 'key-1', 'b', {}, t.noteOperation({ version: 2 })));
        expect(refused.error.code).toBe('version_conflict');
        expect(refused.error.message).toContain('create_note@v1');
        expect(refused.error.message).toContain('operation_id is no longer kept');
        const listed = { ...t.noteOperation({ version: 2 }), replaysVersions: [1] };
        expect(failed(await call(t, 'key-1', 'b', {}, listed)).error.code).toBe('key_expired');
        expect(await counts(t)).toEqual({ notes: 1, receipts: 0, tombstones: 1 });
        // Once the tombstone's own life is over, the key is free again, for any version.
        clock.advance(DAY);
        expect(succeeded(await call(t, 'key-1', 'b', {}, t.noteOperation({ version: 2 }))).replayed).toBe(
          false,
        );
        expect(await counts(t)).toEqual({ notes: 2, receipts: 1, tombstones: 0 });
      });
    });

    describe('failures', () => {
      it('rolls back an effect that throws, answers internal, and lets the retry execute', async () => {
        const t = await open();
        let failures = 1;
        const flaky = t.noteOperation({
          afterInsert: () => {
            if (failures > 0) {
              failures -= 1;
              throw new Error('downstream exploded');
            }
          },
        });

        const broken = failed(await call(t, 'key-1', 'b', {}, flaky));
        expect(broken.error.code).toBe('internal');
        expect(broken.error.retryable).toBe(false);
        expect(await counts(t)).toEqual({ notes: 0, receipts: 0, tombstones: 0 });

        const retry = succeeded(await call(t, 'key-1', 'b', {}, flaky));
        expect(retry.replayed).toBe(false);
        expect(await counts(t)).toEqual({ notes: 1, receipts: 1, tombstones: 0 });
        expect(succeeded(await call(t, 'key-1', 'b', {}, flaky)).operationId).toBe(retry.operationId);
      });

      it('answers invalid_argument for an invalid key and writes nothing', async () => {
        const t = await open();
        for (const key of ['', 'x'.repeat(256), 'tab\there', 'ключ', 42, undefined, null]) {
          const outcome = failed(await call(t, key));
          expect(outcome.error.code, JSON.stringify(key)).toBe('invalid_argument');
        }
        expect(await counts(t)).toEqual({ notes: 0, receipts: 0, tombstones: 0 });
      });

      it('answers invalid_argument for arguments JSON cannot represent and writes nothing', async () => {
        const t = await open();
        const outcome = await t.executor.run(t.createNote, {
          principal: 'alice',
          workspace: 'ws-1',
          key: 'key-1',
          args: { body: 'b', size: 10n } as unknown as { body: string },
        });
        expect(failed(outcome).error.code).toBe('invalid_argument');
        expect(await counts(t)).toEqual({ notes: 0, receipts: 0, tombstones: 0 });
      });

      it('refuses an effect result that uses a reserved field and rolls the effect back', async () => {
        const t = await open();
        for (const reserved of ['status', 'operation_id', 'replayed']) {
          const op = t.noteOperation({ extraResult: { [reserved]: 'mine' } });
          const outcome = failed(await call(t, `key-${reserved}`, 'b', {}, op));
          expect(outcome.error.code, reserved).toBe('internal');
        }
        expect(await counts(t)).toEqual({ notes: 0, receipts: 0, tombstones: 0 });
      });

      it('keeps extra result fields of the effect in the stored and replayed result', async () => {
        const t = await open();
        const op = t.noteOperation({ extraResult: { title: 'T', tags: ['a', 'b'], meta: { n: 1 } } });
        const first = succeeded(await call(t, 'key-1', 'b', {}, op));
        expect(first.result).toMatchObject({ title: 'T', tags: ['a', 'b'], meta: { n: 1 } });
        expect(succeeded(await call(t, 'key-1', 'b', {}, op)).result).toEqual(first.result);
      });
    });

    describe('operations queries', () => {
      it('getOperation answers undefined for an unknown id', async () => {
        const t = await open();
        expect(await t.store.ledger.get('op_00000000000000000000000000000000')).toBeUndefined();
      });

      it('listOperations returns receipts newest first, filtered by status and limited', async () => {
        const clock = new FakeClock();
        const t = await open({ clock });
        const ids: string[] = [];
        for (let i = 0; i < 3; i += 1) {
          ids.push(succeeded(await call(t, `key-${i}`, `body-${i}`)).operationId);
          clock.advance(1000);
        }

        const all = await t.store.ledger.list();
        expect(all.map((r) => r.operationId)).toEqual([...ids].reverse());
        expect(all.every((r) => r.status === 'succeeded')).toBe(true);
        expect((await t.store.ledger.list({ status: 'succeeded' })).map((r) => r.operationId)).toEqual(
          [...ids].reverse(),
        );
        expect(await t.store.ledger.list({ status: 'failed' })).toEqual([]);
        expect((await t.store.ledger.list({ limit: 2 })).map((r) => r.operationId)).toEqual([ids[2], ids[1]]);
        expect(await t.store.ledger.get(ids[1] as string)).toEqual(all[1]);
      });
    });
  });
}
