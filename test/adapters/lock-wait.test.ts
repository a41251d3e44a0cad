import { afterEach, describe, expect, it } from 'vitest';
import {
  lockPauseMs,
  lockRetryAfterMs,
  LockWait,
  MAX_LOCK_PAUSE_MS,
  retryWhileBusy,
  retryWhileBusySync,
  writeLockTimeout,
} from '../../packages/idem/src/adapters/sqlite/lock-wait.js';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import {
  migrateSqliteAsync,
  migrateSqliteWaiting,
  SQLITE_SCHEMA_VERSION,
} from '../../packages/idem/src/adapters/sqlite/sqlite-schema.js';
import { WriteTurn } from '../../packages/idem/src/adapters/sqlite/write-turn.js';
import { IdemError } from '../../packages/idem/src/core/errors.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { removeTempFiles, tempFile } from '../helpers/temp-files.js';

afterEach(removeTempFiles);

const busy = () => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });

/** Lets queued callbacks run (no timer). */
const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Waits (in event-loop turns, bounded) until something sleeps on `clock`. */
async function untilSleeping(clock: FakeClock): Promise<void> {
  for (let i = 0; i < 1000 && clock.pendingSleepers === 0; i += 1) await turn();
  expect(clock.pendingSleepers).toBeGreaterThan(0);
}

/** Advances `clock` 1 ms at a time whenever something sleeps on it, until `promise` settles. */
async function drive<T>(clock: FakeClock, promise: Promise<T>, limitMs = 10_000): Promise<T> {
  let settled = false;
  const watched = promise.finally(() => {
    settled = true;
  });
  watched.catch(() => undefined);
  for (let i = 0; i < 100_000 && !settled && clock.monotonic() <= limitMs; i += 1) {
    if (clock.pendingSleepers > 0) clock.advance(1);
    await turn();
  }
  return watched;
}

describe('the SQLite lock-wait schedule', () => {
  it('pauses 1, 2, 4, 8, 16, then 25 ms', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 30].map(lockPauseMs)).toEqual([1, 2, 4, 8, 16, 25, 25, 25]);
    expect(MAX_LOCK_PAUSE_MS).toBe(25);
  });

  it('tells a caller whose wait ran out to come back after a quarter of it, 50 ms to 1 s', () => {
    expect([100, 1000, 5000, 60_000].map(lockRetryAfterMs)).toEqual([50, 250, 1000, 1000]);
    expect(writeLockTimeout(1000)).toMatchObject({
      code: 'busy',
      retryable: true,
      retryAfterMs: 250,
      message: 'the write lock was not obtained within 1000 ms; nothing was changed',
    });
  });
});

describe('LockWait', () => {
  it('sleeps the schedule on the injected clock, cut at the bound, then says the bound passed', async () => {
    const clock = new FakeClock();
    const wait = new LockWait(10, clock);
    const slept: number[] = [];
    for (;;) {
      const before = clock.monotonic();
      const pausing = wait.pause();
      if (clock.pendingSleepers === 0) {
        expect(await pausing).toBe(false);
        break;
      }
      // Exactly the pause: one ms less leaves it asleep.
      const sleeper = clock.pendingSleepers;
      let ms = 0;
      while (clock.pendingSleepers === sleeper) {
        clock.advance(1);
        ms += 1;
        await turn();
      }
      expect(await pausing).toBe(true);
      slept.push(ms);
      expect(clock.monotonic() - before).toBe(ms);
    }
    expect(slept).toEqual([1, 2, 4, 3]); // 1 + 2 + 4 = 7, then the 3 ms left of the 10 ms bound
    expect(wait.leftMs).toBe(0);
  });

  it('pauseSync counts what it slept, so a synchronous wait ends on a clock it cannot move', () => {
    const clock = new FakeClock();
    const wait = new LockWait(20, clock);
    let pauses = 0;
    while (wait.pauseSync()) pauses += 1;
    expect(pauses).toBe(5); // 1 + 2 + 4 + 8 + 5 (cut to the bound) = 20 ms
    expect(clock.monotonic()).toBe(0);
    expect(wait.leftMs).toBeLessThanOrEqual(0);
  });

  it('until() resolves true when the event comes first, false at the bound, and rejects on abort', async () => {
    const clock = new FakeClock();
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = new LockWait(100, clock).until(released);
    release();
    expect(await first).toBe(true);
    expect(clock.pendingSleepers).toBe(0); // its bound's sleep is gone with it

    const never = new Promise<void>(() => undefined);
    const second = new LockWait(100, clock).until(never);
    await untilSleeping(clock);
    clock.advance(99);
    await turn();
    clock.advance(1);
    expect(await second).toBe(false);

    const controller = new AbortController();
    const third = new LockWait(100, clock).until(never, controller.signal);
    controller.abort(new Error('stop'));
    await expect(third).rejects.toThrow('stop');
    expect(clock.pendingSleepers).toBe(0);
  });
});

describe('retryWhileBusy(Sync)', () => {
  it('tries again while SQLITE_BUSY, and gives the result once the lock is free', async () => {
    let tries = 0;
    expect(
      retryWhileBusySync(() => {
        tries += 1;
        if (tries < 3) throw busy();
        return 'migrated';
      }, 1000),
    ).toBe('migrated');
    expect(tries).toBe(3);

    const clock = new FakeClock();
    let asyncTries = 0;
    const running = retryWhileBusy(
      async () => {
        asyncTries += 1;
        if (asyncTries < 4) throw busy();
        return 'written';
      },
      new LockWait(1000, clock),
    );
    expect(await drive(clock, running)).toBe('written');
    expect(asyncTries).toBe(4);
    expect(clock.monotonic()).toBe(1 + 2 + 4);
  });

  it('gives up with writeLockTimeout once the bound passed, and throws any other error at once', async () => {
    let tries = 0;
    const started = performance.now();
    let caught: unknown;
    try {
      retryWhileBusySync(() => {
        tries += 1;
        throw busy();
      }, 40);
    } catch (error) {
      caught = error;
    }
    expect(performance.now() - started).toBeGreaterThanOrEqual(35);
    expect(caught).toBeInstanceOf(IdemError);
    expect(caught).toMatchObject({
      code: 'busy',
      retryAfterMs: 50,
      message: expect.stringContaining('40 ms'),
    });
    expect(tries).toBeGreaterThan(2);

    const other = Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
    let otherTries = 0;
    expect(() =>
      retryWhileBusySync(() => {
        otherTries += 1;
        throw other;
      }, 1000),
    ).toThrow(other);
    expect(otherTries).toBe(1);

    const clock = new FakeClock();
    const running = retryWhileBusy(
      () => {
        throw busy();
      },
      new LockWait(30, clock),
      { gaveUp: () => new Error('gave up') },
    );
    await expect(drive(clock, running)).rejects.toThrow('gave up');
    expect(clock.monotonic()).toBe(30);
  });
});

describe('the SQLite migration, while another connection holds the write lock', () => {
  it('waits synchronously within lockTimeoutMs, then answers busy (never spins on a fake clock)', () => {
    const file = tempFile();
    const holder = openSqlite(file);
    const db = openSqlite(file);
    db.pragma('busy_timeout = 0');
    holder.exec('BEGIN IMMEDIATE');
    const started = performance.now();
    expect(() => migrateSqliteWaiting(db, 60, new FakeClock())).toThrow(
      expect.objectContaining({ code: 'busy', message: expect.stringContaining('60 ms') }),
    );
    expect(performance.now() - started).toBeGreaterThanOrEqual(50);
    holder.exec('ROLLBACK');
    expect(migrateSqliteWaiting(db, 60)).toBe(SQLITE_SCHEMA_VERSION);
    holder.close();
    db.close();
  });

  it('waits asynchronously on the clock and migrates once the lock is released', async () => {
    const file = tempFile();
    const holder = openSqlite(file);
    const db = openSqlite(file);
    db.pragma('busy_timeout = 0');
    holder.exec('BEGIN IMMEDIATE');
    const clock = new FakeClock();
    const migrating = migrateSqliteAsync(db, 1000, clock);
    await untilSleeping(clock);
    clock.advance(1);
    await untilSleeping(clock); // tried again, still locked: sleeping the next pause
    holder.exec('ROLLBACK');
    expect(await drive(clock, migrating)).toBe(SQLITE_SCHEMA_VERSION);
    expect(db.pragma('user_version', { simple: true })).toBe(SQLITE_SCHEMA_VERSION);
    holder.close();
    db.close();
  });
});

describe('WriteTurn', () => {
  it("lines up this process's writers on one file: the next goes when the one ahead releases", async () => {
    const file = tempFile();
    const clock = new FakeClock();
    const first = new WriteTurn(file);
    const second = new WriteTurn(file);
    await first.take(new LockWait(1000, clock));
    let secondIn = false;
    const taking = second.take(new LockWait(1000, clock)).then(() => {
      secondIn = true;
    });
    await turn();
    expect(secondIn).toBe(false);
    first.release();
    await taking;
    expect(secondIn).toBe(true);
    // The line goes on behind the second: a third waits for it although the first has left.
    const third = new WriteTurn(file);
    let thirdIn = false;
    const thirdTaking = third.take(new LockWait(1000, clock)).then(() => {
      thirdIn = true;
    });
    await turn();
    expect(thirdIn).toBe(false);
    second.release();
    await thirdTaking;
    third.release();
    // Nobody ahead any more: a new writer goes at once.
    const fourth = new WriteTurn(file);
    await fourth.take(new LockWait(1000, clock));
    fourth.release();
  });

  it('answers busy after the bound when the writer ahead never releases; the one after goes on', async () => {
    const file = tempFile();
    const clock = new FakeClock();
    const holder = new WriteTurn(file);
    await holder.take(new LockWait(1000, clock));
    const late = new WriteTurn(file);
    const refused = late.take(new LockWait(100, clock)).then(
      () => undefined,
      (error: unknown) => error,
    );
    await untilSleeping(clock);
    clock.advance(100);
    expect(await refused).toMatchObject({ code: 'busy', message: expect.stringContaining('100 ms') });
    late.release();
    // The writer ahead still holds its turn: the next one waits for it, not for the one that left.
    const next = new WriteTurn(file);
    let nextIn = false;
    const taking = next.take(new LockWait(1000, clock)).then(() => {
      nextIn = true;
    });
    await turn();
    expect(nextIn).toBe(false);
    holder.release();
    await taking;
    expect(nextIn).toBe(true);
    next.release();
  });

  it('keeps no line for an in-memory database (a single connection)', async () => {
    const clock = new FakeClock();
    const a = new WriteTurn(':memory:');
    const b = new WriteTurn(':memory:');
    await a.take(new LockWait(10, clock));
    await b.take(new LockWait(10, clock));
    a.release();
    b.release();
  });
});
