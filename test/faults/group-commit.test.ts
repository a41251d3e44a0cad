import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type {
  SqliteDatabase,
  SqliteStatement,
} from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import {
  SqliteStore,
  type SqliteStoreOptions,
} from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import type { FaultPoint } from '../../packages/idem/src/core/fault-points.js';
import {
  Executor,
  type CallOutcome,
  type IdempotentOperation,
} from '../../packages/idem/src/executor/executor.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import {
  makeTempDir,
  NOTES_TABLE_SQL,
  noteOperation,
  type NoteArgs,
  type NoteOperationOptions,
} from '../helpers/store-fixtures.js';

const CONTROL = /^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b/i;

/**
 * A connection that records every transaction-control statement the store runs on it (prepared
 * or exec'd), so that a test can count transactions and see where each call's savepoint went.
 * Read transactions (`BEGIN DEFERRED` ... `COMMIT`: lookups read together) are left out: this
 * file counts write transactions.
 */
function recording(db: SqliteDatabase, log: string[]): SqliteDatabase {
  let reading = false;
  const wrap = (sql: string, statement: SqliteStatement): SqliteStatement => ({
    run: (...params) => {
      const result = statement.run(...params);
      const text = sql.trim().toUpperCase();
      if (text === 'BEGIN DEFERRED') reading = true;
      else if (reading && (text === 'COMMIT' || text === 'ROLLBACK')) reading = false;
      else log.push(text);
      return result;
    },
    get: (...params) => statement.get(...params),
    all: (...params) => statement.all(...params),
    raw: (toggle) => wrap(sql, statement.raw(toggle)),
  });
  return new Proxy(db, {
    get(target, property) {
      if (property === 'prepare') {
        return (sql: string) => {
          const statement = target.prepare(sql);
          return CONTROL.test(sql) ? wrap(sql, statement) : statement;
        };
      }
      if (property === 'exec') {
        return (sql: string) => {
          const result = target.exec(sql);
          if (CONTROL.test(sql)) log.push(sql.trim().toUpperCase());
          return result;
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

interface Harness {
  readonly path: string;
  readonly db: SqliteDatabase;
  readonly store: SqliteStore;
  readonly executor: Executor<SqliteDatabase>;
  /** Transaction-control statements in the order they succeeded. */
  readonly log: string[];
  /** A second connection: it sees committed data only. */
  readonly observer: SqliteDatabase;
  call(
    key: string,
    body?: string,
    operation?: IdempotentOperation<SqliteDatabase, NoteArgs>,
  ): Promise<CallOutcome>;
  committedNotes(): string[];
  count(table: string): number;
}

function setup(
  options: SqliteStoreOptions & {
    synchronous?: 'FULL' | 'NORMAL';
    open?: (p: string) => SqliteDatabase;
  } = {},
): Harness {
  const dir = makeTempDir();
  const file = path.join(dir, 'idem.sqlite');
  const raw = openSqlite(file, { synchronous: options.synchronous ?? 'FULL' });
  raw.exec(NOTES_TABLE_SQL);
  const log: string[] = [];
  const db = recording(raw, log);
  const { synchronous: _s, open: _o, ...storeOptions } = options;
  const store = new SqliteStore(db, storeOptions);
  const executor = new Executor<SqliteDatabase>({
    store,
    authorize: () => true,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  const observer = openSqlite(file);
  const controller = new AbortController();
  onTestFinished(async () => {
    controller.abort(new Error('test finished'));
    await store.close();
    observer.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const createNote = noteOperation();
  log.length = 0; // migrations are not what is measured
  return {
    path: file,
    db,
    store,
    executor,
    log,
    observer,
    call: (key, body = `body of ${key}`, operation = createNote) =>
      executor.run(operation, {
        principal: 'alice',
        workspace: 'ws-1',
        key,
        args: { body },
        signal: controller.signal,
      }),
    committedNotes: () =>
      (observer.prepare('SELECT body FROM notes ORDER BY body').all() as { body: string }[]).map(
        (r) => r.body,
      ),
    count: (table) => (observer.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n,
  };
}

function transactions(log: readonly string[]): number {
  return log.filter((s) => s.startsWith('BEGIN')).length;
}

function ok(outcome: CallOutcome | undefined): Extract<CallOutcome, { ok: true }> {
  if (outcome === undefined || !outcome.ok) {
    throw new Error(`expected success, got ${outcome === undefined ? 'nothing' : outcome.error.code}`);
  }
  return outcome;
}

/** Lets every pending callback and immediate run (no clock moves). */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

const keys = (n: number, prefix = 'k') =>
  Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(2, '0')}`);

describe('group commit on SQLite', () => {
  it('waits a turn for companions by default at synchronous=FULL, adapts at NORMAL; configurable', () => {
    const full = setup().store;
    expect([full.maxCommitBatch, full.commitGather]).toEqual([64, 'turn']);
    const normal = setup({ synchronous: 'NORMAL' }).store;
    expect([normal.maxCommitBatch, normal.commitGather]).toEqual([64, 'adaptive']);
    const forced = setup({ synchronous: 'NORMAL', groupCommit: true }).store;
    expect([forced.maxCommitBatch, forced.commitGather]).toEqual([64, 'turn']);
    expect(setup({ groupCommit: false }).store.maxCommitBatch).toBe(1);
    expect(setup({ groupCommit: { maxBatch: 8 } }).store.maxCommitBatch).toBe(8);
    expect(setup({ groupCommit: { gather: 'adaptive' } }).store.commitGather).toBe('adaptive');
  });

  it('at NORMAL (adaptive), calls that overlap still share a COMMIT and a lone call commits alone', async () => {
    const h = setup({ synchronous: 'NORMAL' });
    await Promise.all(keys(10).map((k) => h.call(k)));
    expect(transactions(h.log)).toBeLessThan(10);
    expect(h.count('notes')).toBe(10);
    h.log.length = 0;
    for (const k of keys(3, 'alone')) ok(await h.call(k));
    expect(transactions(h.log)).toBe(3);
    expect(h.log.filter((s) => s.startsWith('SAVEPOINT'))).toHaveLength(0);
  });

  it('commits calls queued together in ONE transaction, each in its own savepoint', async () => {
    const h = setup();
    const outcomes = await Promise.all(keys(10).map((k) => h.call(k)));
    expect(outcomes.every((o) => o.ok && !o.replayed)).toBe(true);

    expect(transactions(h.log)).toBe(1);
    expect(h.log.filter((s) => s === 'COMMIT')).toHaveLength(1);
    expect(h.log.filter((s) => s.startsWith('SAVEPOINT'))).toHaveLength(10);
    expect(h.log.filter((s) => s.startsWith('RELEASE'))).toHaveLength(10);
    expect(h.log[0]).toBe('BEGIN IMMEDIATE');
    expect(h.log.at(-1)).toBe('COMMIT');
    expect(h.count('notes')).toBe(10);
    expect(h.count('idem_operations')).toBe(10);
  });

  it('the database agrees: the batch becomes visible to another connection all at once', async () => {
    const h = setup();
    const seenByObserver: number[] = [];
    // Not a failure: observe what is committed while each call's savepoint is about to be released.
    h.executor.faults.arm('before_commit', () => seenByObserver.push(h.count('notes')), 5);
    const dataVersion = () => Number(h.observer.pragma('data_version', { simple: true }));
    const before = dataVersion();
    await Promise.all(keys(5).map((k) => h.call(k)));
    expect(seenByObserver).toEqual([0, 0, 0, 0, 0]);
    expect(h.count('notes')).toBe(5);
    // data_version moves by one per observed change, whatever the number of commits; the log
    // proves the count.
    expect(dataVersion()).toBeGreaterThan(before);
    expect(transactions(h.log)).toBe(1);
  });

  it('without group commit, every call is its own transaction', async () => {
    const h = setup({ groupCommit: false });
    await Promise.all(keys(10).map((k) => h.call(k)));
    expect(transactions(h.log)).toBe(10);
    expect(h.log.filter((s) => s.startsWith('SAVEPOINT'))).toHaveLength(0);
    expect(h.count('notes')).toBe(10);
  });

  it('respects maxBatch', async () => {
    const h = setup({ groupCommit: { maxBatch: 4 } });
    await Promise.all(keys(10).map((k) => h.call(k)));
    expect(transactions(h.log)).toBe(3);
    expect(h.count('notes')).toBe(10);
  });

  it('a call whose effect throws rolls back only itself; the others of its batch commit', async () => {
    const h = setup();
    const injected = new Error('effect failed');
    const failing = noteOperation({
      afterInsert: (context) => {
        if (context.identity.key === 'k-02') throw injected;
      },
    } satisfies NoteOperationOptions);
    const outcomes = await Promise.all(keys(5).map((k) => h.call(k, `body of ${k}`, failing)));

    expect(transactions(h.log)).toBe(1);
    expect(h.log).toContain('ROLLBACK TO IDEM_CALL');
    const failed = outcomes[2];
    if (failed === undefined || failed.ok) throw new Error('expected k-02 to fail');
    expect(failed.error.code).toBe('internal');
    expect(failed.error.cause).toBe(injected);
    for (const i of [0, 1, 3, 4]) ok(outcomes[i]);
    expect(h.committedNotes()).toEqual(['body of k-00', 'body of k-01', 'body of k-03', 'body of k-04']);
    expect(h.count('idem_operations')).toBe(4);
    expect(
      await h.store.receipts.lookup({
        principal: 'alice',
        workspace: 'ws-1',
        operation: 'create_note',
        version: 1,
        key: 'k-02',
      }),
    ).toBeUndefined();

    // The failed key was rolled back completely: its retry executes once.
    const retry = ok(await h.call('k-02'));
    expect(retry.replayed).toBe(false);
    expect(h.count('notes')).toBe(5);
  });

  for (const point of [
    'after_claim',
    'after_effect',
    'before_commit',
  ] as const satisfies readonly FaultPoint[]) {
    it(`a fault at ${point} in the middle of a batch rolls back that call only`, async () => {
      const h = setup();
      let hits = 0;
      h.executor.faults.arm(
        point,
        () => {
          hits += 1;
          if (hits === 3) throw new Error(`crash at ${point}`);
        },
        5,
      );
      const outcomes = await Promise.all(keys(5).map((k) => h.call(k)));
      expect(transactions(h.log)).toBe(1);
      expect(outcomes.map((o) => (o.ok ? 'ok' : o.error.code))).toEqual(['ok', 'ok', 'internal', 'ok', 'ok']);
      expect(h.committedNotes()).toEqual(['body of k-00', 'body of k-01', 'body of k-03', 'body of k-04']);
      expect(h.count('idem_operations')).toBe(4);
      expect(h.db.inTransaction).toBe(false);
    });
  }

  it('a failure after the batch COMMIT is outcome_unknown for that call only; all are committed', async () => {
    const h = setup();
    let hits = 0;
    h.executor.faults.arm(
      'after_commit',
      () => {
        hits += 1;
        if (hits === 2) throw new Error('crash after commit');
      },
      3,
    );
    const outcomes = await Promise.all(keys(3).map((k) => h.call(k)));
    expect(outcomes.map((o) => (o.ok ? 'ok' : o.error.code))).toEqual(['ok', 'outcome_unknown', 'ok']);
    expect(h.count('notes')).toBe(3);
    const retry = ok(await h.call('k-01'));
    expect(retry.replayed).toBe(true);
    expect(h.count('notes')).toBe(3);
  });

  it('answers no call before the COMMIT that makes its receipt durable', async () => {
    const h = setup();
    const settled: string[] = [];
    const committedAtFirstAnswer: number[] = [];
    const calls = keys(6).map((k) =>
      h.call(k).then((outcome) => {
        settled.push(k);
        committedAtFirstAnswer.push(h.count('idem_operations'));
        h.log.push(`ANSWER ${k}`);
        return outcome;
      }),
    );
    // Inside the transaction, at each call's last moment before COMMIT: nobody has been answered,
    // and nothing of the batch is visible to another connection.
    const atBeforeCommit: { answered: number; committed: number }[] = [];
    h.executor.faults.arm(
      'before_commit',
      () => atBeforeCommit.push({ answered: settled.length, committed: h.count('notes') }),
      6,
    );
    // Right after COMMIT, before any answer: everything is durable already.
    const atAfterCommit: { answered: number; committed: number }[] = [];
    h.executor.faults.arm(
      'after_commit',
      () => atAfterCommit.push({ answered: settled.length, committed: h.count('notes') }),
      6,
    );
    const outcomes = await Promise.all(calls);
    expect(outcomes.every((o) => o.ok)).toBe(true);
    expect(atBeforeCommit).toEqual(Array.from({ length: 6 }, () => ({ answered: 0, committed: 0 })));
    expect(atAfterCommit).toEqual(Array.from({ length: 6 }, () => ({ answered: 0, committed: 6 })));
    expect(committedAtFirstAnswer.every((n) => n === 6)).toBe(true);
    const commitAt = h.log.indexOf('COMMIT');
    const firstAnswer = h.log.findIndex((s) => s.startsWith('ANSWER'));
    expect(commitAt).toBeGreaterThan(-1);
    expect(firstAnswer).toBeGreaterThan(commitAt);
  });

  it('a failing call is not answered before the batch it was in has committed either', async () => {
    const h = setup();
    let committedWhenFailureSeen = -1;
    const failing = noteOperation({
      afterInsert: (context) => {
        if (context.identity.key === 'k-00') throw new Error('effect failed');
      },
    });
    const first = h.call('k-00', 'x', failing).then((outcome) => {
      committedWhenFailureSeen = h.count('notes');
      return outcome;
    });
    const others = keys(3, 'o').map((k) => h.call(k, `body of ${k}`, failing));
    expect((await first).ok).toBe(false);
    expect(committedWhenFailureSeen).toBe(3);
    expect((await Promise.all(others)).every((o) => o.ok)).toBe(true);
  });

  it('one key called 16 times at once: one effect, one transaction, the same operation for all', async () => {
    const h = setup();
    const outcomes = await Promise.all(Array.from({ length: 16 }, () => h.call('same', 'one body')));
    const ids = new Set(outcomes.map((o) => ok(o).operationId));
    expect(ids.size).toBe(1);
    expect(outcomes.filter((o) => ok(o).replayed)).toHaveLength(15);
    expect(transactions(h.log)).toBe(1);
    expect(h.count('notes')).toBe(1);
  });

  it('a payload conflict inside a batch is decided against the uncommitted first call, then both settle after COMMIT', async () => {
    const h = setup();
    const [first, second] = await Promise.all([h.call('k', 'original'), h.call('k', 'changed')]);
    ok(first);
    expect(second?.ok === false && second.error.code).toBe('payload_conflict');
    expect(transactions(h.log)).toBe(1);
    expect(h.committedNotes()).toEqual(['original']);
  });

  it('a batch waiting for a lock held elsewhere takes in the calls that arrive meanwhile', async () => {
    const clock = new FakeClock();
    const h = setup({ clock, lockTimeoutMs: 1000 });
    const holder = openSqlite(h.path);
    onTestFinished(() => {
      if (holder.inTransaction) holder.exec('ROLLBACK');
      holder.close();
    });
    holder.exec('BEGIN IMMEDIATE');

    const early = keys(3, 'early').map((k) => h.call(k));
    for (let i = 0; i < 10; i += 1) {
      await turn();
      clock.advance(5);
    }
    const late = keys(3, 'late').map((k) => h.call(k));
    for (let i = 0; i < 10; i += 1) {
      await turn();
      clock.advance(5);
    }
    expect(h.count('notes')).toBe(0);
    holder.exec('ROLLBACK');
    const results = [...early, ...late];
    let settledCount = 0;
    for (const p of results) void p.then(() => (settledCount += 1));
    while (settledCount < results.length && clock.monotonic() < 900) {
      clock.advance(1);
      await turn();
    }
    const outcomes = await Promise.all(results);
    expect(outcomes.every((o) => o.ok && !o.replayed)).toBe(true);
    expect(transactions(h.log)).toBe(1);
    expect(h.count('notes')).toBe(6);
  });

  it('times out each waiting call after its own lockTimeoutMs with busy, and commits nothing', async () => {
    const clock = new FakeClock();
    const h = setup({ clock, lockTimeoutMs: 100 });
    const holder = openSqlite(h.path);
    onTestFinished(() => {
      if (holder.inTransaction) holder.exec('ROLLBACK');
      holder.close();
    });
    holder.exec('BEGIN IMMEDIATE');
    const calls = keys(4).map((k) => h.call(k));
    let settledCount = 0;
    for (const p of calls) void p.then(() => (settledCount += 1));
    while (settledCount < calls.length && clock.monotonic() < 500) {
      await turn();
      clock.advance(1);
    }
    const outcomes = await Promise.all(calls);
    expect(outcomes.map((o) => (o.ok ? 'ok' : o.error.code))).toEqual(['busy', 'busy', 'busy', 'busy']);
    expect(clock.monotonic()).toBeGreaterThanOrEqual(100);
    expect(h.count('notes')).toBe(0);
  });

  it('when SQLite abandons the whole transaction mid-batch, earlier calls fail as rolled back and later ones run in a new transaction', async () => {
    const h = setup();
    const rogue = noteOperation({
      afterInsert: (context) => {
        // What an I/O error or SQLITE_FULL does: SQLite rolls the whole transaction back.
        if (context.identity.key === 'k-02') {
          h.db.exec('ROLLBACK');
          throw new Error('disk I/O error');
        }
      },
    });
    const outcomes = await Promise.all(keys(5).map((k) => h.call(k, `body of ${k}`, rogue)));
    expect(outcomes.map((o) => (o.ok ? 'ok' : o.error.code))).toEqual([
      'internal',
      'internal',
      'internal',
      'ok',
      'ok',
    ]);
    expect(h.committedNotes()).toEqual(['body of k-03', 'body of k-04']);
    expect(h.count('idem_operations')).toBe(2);
    expect(h.db.inTransaction).toBe(false);
    // Nothing of the first three was kept: each retry executes once.
    for (const k of ['k-00', 'k-01', 'k-02']) expect(ok(await h.call(k)).replayed).toBe(false);
    expect(h.count('notes')).toBe(5);
  });
});
