import { describe, expect, it, onTestFinished } from 'vitest';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import { systemClock, type Clock } from '../../packages/idem/src/core/clock.js';
import type { CallOutcome } from '../../packages/idem/src/executor/executor.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { openTestStore, type SqliteTestStore, type TestStoreOptions } from '../helpers/store-fixtures.js';

interface Harness {
  t: SqliteTestStore;
  /** Aborted when the test ends, so that no call is left waiting for the lock. */
  signal: AbortSignal;
  /** Takes the write lock on a raw second connection and keeps it until `release`. */
  holdWriteLock(): { db: SqliteDatabase; release: () => void };
  call(key: string, body?: string, signal?: AbortSignal): Promise<CallOutcome>;
}

function setup(options?: TestStoreOptions): Harness {
  const t = openTestStore(options);
  const controller = new AbortController();
  const holders: SqliteDatabase[] = [];
  const release = (db: SqliteDatabase) => {
    if (db.open && db.inTransaction) db.exec('ROLLBACK');
  };
  // One hook, in this order: stop waiting calls, free the lock, close everything.
  onTestFinished(async () => {
    controller.abort(new Error('test finished'));
    for (const db of holders) {
      release(db);
      db.close();
    }
    await t.close();
  });
  return {
    t,
    signal: controller.signal,
    holdWriteLock() {
      const db = openSqlite(t.path);
      holders.push(db);
      db.exec('BEGIN IMMEDIATE');
      return { db, release: () => release(db) };
    },
    call(key, body = 'b', signal = controller.signal) {
      return t.executor.run(t.createNote, {
        principal: 'alice',
        workspace: 'ws-1',
        key,
        args: { body },
        signal,
      });
    },
  };
}

function track<T>(promise: Promise<T>): { readonly settled: boolean; readonly promise: Promise<T> } {
  const state = { settled: false, promise };
  promise.then(
    () => (state.settled = true),
    () => (state.settled = true),
  );
  return state;
}

/** Lets every pending promise callback run (not a timer: no time passes on any clock). */
function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

describe('write lock held by another connection', () => {
  it('answers busy after lockTimeoutMs, writes nothing, and the retry succeeds once the lock is free', async () => {
    const { t, call, holdWriteLock, signal } = setup({ lockTimeoutMs: 100 });
    const holder = holdWriteLock();

    // A guard, not a wait: it only ends the call if the store never answers busy by itself.
    const guard = new AbortController();
    const timer = setTimeout(() => guard.abort(new Error('no answer within 2 s')), 2000);
    const started = performance.now();
    const outcome = await call('key-1', 'b', AbortSignal.any([signal, guard.signal]));
    clearTimeout(timer);
    const waited = performance.now() - started;

    if (outcome.ok) throw new Error('expected busy');
    expect(outcome.error.code).toBe('busy');
    expect(outcome.error.retryable).toBe(true);
    expect(outcome.error.retryAfterMs).toBeGreaterThan(0);
    expect(waited).toBeGreaterThanOrEqual(100);
    expect(waited).toBeLessThan(1000);
    expect(await t.countNotes()).toBe(0);
    expect(await t.countReceipts()).toBe(0);

    holder.release();
    const retry = await call('key-1');
    if (!retry.ok) throw new Error(`retry failed: ${retry.error.code}`);
    expect(retry.replayed).toBe(false);
    expect(await t.countNotes()).toBe(1);
  });

  it('answers replays and conflicts of existing keys while a write waits for the lock', async () => {
    let announceWaiting: () => void = () => {};
    const writeIsWaiting = new Promise<void>((resolve) => (announceWaiting = resolve));
    // The real clock, except that the store's first pause for the lock is announced.
    const clock: Clock = {
      now: () => systemClock.now(),
      monotonic: () => systemClock.monotonic(),
      sleep: (ms, options) => {
        announceWaiting();
        return systemClock.sleep(ms, options);
      },
    };
    const { t, call, holdWriteLock } = setup({ clock, lockTimeoutMs: 5000 });
    const existing = await call('existing', 'original');
    if (!existing.ok) throw new Error('setup failed');

    const holder = holdWriteLock();
    const pendingWrite = track(call('new-key'));
    await writeIsWaiting;

    const replay = await call('existing', 'original');
    if (!replay.ok) throw new Error(`replay failed: ${replay.error.code}`);
    expect(replay.replayed).toBe(true);
    expect(replay.operationId).toBe(existing.operationId);
    const conflict = await call('existing', 'changed');
    expect(conflict.ok ? 'ok' : conflict.error.code).toBe('payload_conflict');
    expect(await t.store.ledger.get(existing.operationId)).toBeDefined();
    expect(pendingWrite.settled).toBe(false);

    holder.release();
    const written = await pendingWrite.promise;
    if (!written.ok) throw new Error(`write failed: ${written.error.code}`);
    expect(written.replayed).toBe(false);
    expect(await t.countNotes()).toBe(2);
  });

  it('measures the lock timeout on the injected clock: not busy before lockTimeoutMs, busy at it', async () => {
    const clock = new FakeClock();
    const { t, call, holdWriteLock } = setup({ clock, lockTimeoutMs: 1000 });
    holdWriteLock();

    const outcome = track(call('key-1'));
    while (clock.monotonic() < 999) {
      await flush();
      expect(outcome.settled).toBe(false);
      clock.advance(1);
    }
    await flush();
    expect(outcome.settled).toBe(false);

    while (!outcome.settled && clock.monotonic() < 1100) {
      clock.advance(1);
      await flush();
    }
    expect(outcome.settled).toBe(true);
    expect(clock.monotonic()).toBeGreaterThanOrEqual(1000);
    const result = await outcome.promise;
    if (result.ok) throw new Error('expected busy');
    expect(result.error.code).toBe('busy');
    expect(result.error.retryAfterMs).toBeGreaterThan(0);
    expect(await t.countNotes()).toBe(0);
  });

  it('goes ahead as soon as the lock is released within lockTimeoutMs', async () => {
    const clock = new FakeClock();
    const { t, call, holdWriteLock } = setup({ clock, lockTimeoutMs: 1000 });
    const holder = holdWriteLock();

    const outcome = track(call('key-1'));
    while (clock.monotonic() < 500) {
      await flush();
      clock.advance(5);
    }
    expect(outcome.settled).toBe(false);
    holder.release();
    while (!outcome.settled && clock.monotonic() < 600) {
      clock.advance(1);
      await flush();
    }
    const result = await outcome.promise;
    if (!result.ok) throw new Error(`expected success, got ${result.error.code}`);
    expect(result.replayed).toBe(false);
    expect(await t.countNotes()).toBe(1);
  });

  it('keeps concurrent writers of one store queued behind the lock, then runs each once', async () => {
    const clock = new FakeClock();
    const { t, call, holdWriteLock } = setup({ clock, lockTimeoutMs: 1000 });
    const holder = holdWriteLock();

    const outcomes = ['a', 'b', 'a', 'c'].map((key) => track(call(key)));
    for (let i = 0; i < 20; i += 1) {
      await flush();
      clock.advance(5);
    }
    expect(outcomes.some((o) => o.settled)).toBe(false);
    holder.release();
    while (outcomes.some((o) => !o.settled) && clock.monotonic() < 900) {
      clock.advance(1);
      await flush();
    }
    const results = await Promise.all(outcomes.map((o) => o.promise));
    expect(results.every((r) => r.ok)).toBe(true);
    expect(await t.countNotes()).toBe(3);
    const [a1, , a2] = results;
    if (!a1?.ok || !a2?.ok) throw new Error('unreachable');
    expect(a2.operationId).toBe(a1.operationId);
  });
});
