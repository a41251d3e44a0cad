import { closeSync, fsyncSync, openSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { migrateSqlite, type SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/index.js';
import { fingerprint } from '../../packages/idem/src/core/fingerprint.js';
import { alternate, type Resumable } from '../lib/alternate.js';
import { closedLoop, collectGarbage, type Op } from '../lib/measure.js';
import {
  idemCall,
  NOTES_SQL,
  newKey,
  noteBody,
  openIdemSqlite,
  PRINCIPAL,
  WORKSPACE,
  type IdemSqlite,
} from '../lib/notes.js';
import { logRow, maybeProfiled, measureRows, wanted, type PlannedRow } from '../lib/rows.js';
import type { RowResult, SuiteContext } from '../lib/types.js';

const PREFILL_BODY = 'a prefilled note';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export function formatCount(n: number): string {
  if (n >= 1_000_000 && n % 1_000_000 === 0) return `${n / 1_000_000}M`;
  if (n >= 1000 && n % 1000 === 0) return `${n / 1000}k`;
  return String(n);
}

/**
 * Writes `rows` receipts of create_note v1 into a new database file in one transaction, fast:
 * sequential keys (so every index grows at its end), no journal, one fsync at the end. Returns
 * the seconds it took. `expired` receipts have expired an hour ago (for the sweeper).
 */
export function prefill(path: string, rows: number, expired: boolean): number {
  const started = performance.now();
  const db = new Database(path);
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  db.pragma('cache_size = -1000000');
  db.pragma('temp_store = MEMORY');
  migrateSqlite(db as unknown as SqliteDatabase);
  db.exec(NOTES_SQL);
  if (rows > 0) {
    const now = Date.now();
    const createdAt = expired ? now - DAY - HOUR - rows : now - rows;
    const expiresAt = expired ? now - HOUR - rows : now + DAY;
    const statement = db.prepare(`
      WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < @rows - 1)
      INSERT INTO idem_operations (operation_id, principal, workspace, operation, version, idem_key, fingerprint,
        kind, status, resource_id, result_json, created_at, updated_at, expires_at, attempt_count, dispatched)
      SELECT 'op_pre' || printf('%010d', i), @principal, @workspace, 'create_note', 1, 'pre-' || printf('%010d', i),
        @fingerprint, 'local', 'succeeded', 'note_pre' || printf('%010d', i),
        json_object('status', 'succeeded', 'operation_id', 'op_pre' || printf('%010d', i),
          'resource_id', 'note_pre' || printf('%010d', i), 'note_id', 'note_pre' || printf('%010d', i)),
        @createdAt + i, @createdAt + i, @expiresAt + i, 1, 0
      FROM seq`);
    db.transaction(() =>
      statement.run({
        rows,
        principal: PRINCIPAL,
        workspace: WORKSPACE,
        fingerprint: fingerprint({ body: PREFILL_BODY }),
        createdAt,
        expiresAt,
      }),
    )();
  }
  db.close();
  // Written with synchronous=OFF: flush it now, or the kernel's writeback of it competes with the
  // fsyncs of whichever row is measured first.
  const fd = openSync(path, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return (performance.now() - started) / 1000;
}

export function prefilledKey(i: number): string {
  return `pre-${String(i).padStart(10, '0')}`;
}

function countReceipts(idem: IdemSqlite): number {
  return count(idem, 'SELECT count(*) AS n FROM idem_operations');
}

function count(idem: IdemSqlite, sql: string): number {
  return (idem.db.prepare(sql).get() as { n: number }).n;
}

/** p50/p99 of first executions and replays with 0, 1M and 5M receipts in the table (quick: 0, 100k). */
export async function receiptsSuite(context: SuiteContext): Promise<RowResult[]> {
  const sizes = context.quick ? [0, 100_000] : [0, 1_000_000, 5_000_000];
  const group = 'Receipts table size (SQLite FULL, Idem, 1 in flight)';
  const stores: IdemSqlite[] = [];
  const planned: PlannedRow[] = [];
  try {
    for (const size of sizes) {
      const name = formatCount(size);
      const anyWanted = ['first', 'replay'].some((s) => wanted(context, `receipts/idem/${s}/n${name}`));
      if (!anyWanted) continue;
      const path = join(context.tmpDir, `receipts-${name}.sqlite`);
      const seconds = prefill(path, size, false);
      const idem = openIdemSqlite(path, 'FULL');
      stores.push(idem);
      const actual = countReceipts(idem);
      context.log(`prefilled ${actual.toLocaleString('en-US')} receipts in ${seconds.toFixed(1)} s`);
      // Replays of receipts spread over the whole table (random keys among the prefilled ones).
      const replayKeys =
        size === 0
          ? await (async () => {
              const keys = Array.from({ length: 1000 }, () => newKey());
              for (const key of keys) await idemCall(idem, key, PREFILL_BODY, 'executed');
              return keys;
            })()
          : Array.from({ length: 10_000 }, () => prefilledKey(Math.floor(Math.random() * size)));
      const extra = { prefilledReceipts: actual, prefillSeconds: Math.round(seconds * 10) / 10 };
      const first: Op = async (_lane, seq) => {
        await idemCall(idem, newKey(), noteBody(seq), 'executed');
      };
      const replay: Op = async (_lane, seq) => {
        await idemCall(idem, replayKeys[seq % replayKeys.length] as string, PREFILL_BODY, 'replayed');
      };
      for (const [scenario, op] of [
        ['first', first],
        ['replay', replay],
      ] as const) {
        planned.push({
          spec: {
            id: `receipts/idem/${scenario}/n${name}`,
            group,
            system: 'Idem: Executor + SqliteStore',
            scenario: `${scenario === 'first' ? 'first execution' : 'replay'}, ${actual.toLocaleString('en-US')} receipts`,
            concurrency: 1,
            ...(size === 0 ? {} : { baseline: `receipts/idem/${scenario}/n0`, ratioOf: 'p99' as const }),
            extra,
          },
          op,
        });
      }
    }
    // Sizes next to each other per scenario, so that drift hits them alike.
    planned.sort((a, b) => (a.spec.id.split('/')[2] ?? '').localeCompare(b.spec.id.split('/')[2] ?? ''));
    return await measureRows(context, planned);
  } finally {
    for (const idem of stores) await idem.close();
  }
}

/**
 * The sweeper turning expired receipts into tombstones (time-sized batches of at most 500 rows) while
 * a writer runs first executions: the writer's p99 during the sweep against its p99 without one, on
 * the same table; with the defaults, with a sweep that never pauses, and with background checkpoints.
 */
/** Most sweep time of a comparison row of the sweep suite, ms (the default row sweeps everything). */
const COMPARISON_SWEEP_MS = 40_000;

export async function sweepSuite(context: SuiteContext): Promise<RowResult[]> {
  // --quick: few enough that a slow disk (a sweep of 2,000 to 7,000 receipts/s beside the writer)
  // still keeps the whole quick run under a minute.
  const expired = context.quick ? 10_000 : 1_000_000;
  const group = `Sweeper: ${formatCount(expired)} expired receipts moved to tombstones while a writer runs (SQLite FULL)`;
  const rows: RowResult[] = [];
  const batchSize = 500;
  const configs: {
    system: string;
    label: string;
    checkpoint?: 'inline' | 'background';
    maxDuty?: number;
    /** Stop after this much sweep time (ms) even if receipts are left: the comparisons. */
    maxSweepMs?: number;
  }[] = [
    { system: 'idem', label: 'Idem: Executor + SqliteStore (the defaults)' },
    // The comparisons, each on its own table; they sweep for at most COMPARISON_SWEEP_MS so that a
    // slow disk (run K swept 6,500 receipts/s) cannot push the suite past its time limit. --quick
    // leaves them out to stay under a minute.
    ...(context.quick
      ? []
      : [
          {
            system: 'idem-duty1',
            label: 'Idem, sweep without pauses (maxDuty: 1)',
            maxDuty: 1,
            maxSweepMs: COMPARISON_SWEEP_MS,
          },
          {
            system: 'idem-bg',
            label: "Idem, checkpoint: 'background'",
            checkpoint: 'background' as const,
            maxSweepMs: COMPARISON_SWEEP_MS,
          },
        ]),
  ];
  for (const { system, label: systemLabel, checkpoint, maxDuty, maxSweepMs } of configs) {
    const baseId = `sweep/${system}/first/no-sweep-b${batchSize}`;
    const duringId = `sweep/${system}/first/during-sweep-b${batchSize}`;
    if (!wanted(context, baseId) && !wanted(context, duringId)) continue;
    const path = join(context.tmpDir, `sweep-${system}.sqlite`);
    const seconds = prefill(path, expired, true);
    const idem = openIdemSqlite(path, 'FULL', checkpoint === undefined ? {} : { checkpoint });
    try {
      const actual = countReceipts(idem);
      context.log(`prefilled ${actual.toLocaleString('en-US')} expired receipts in ${seconds.toFixed(1)} s`);
      const writer: Op = async (_lane, seq) => {
        await idemCall(idem, newKey(), noteBody(seq), 'executed');
      };
      const extra = { expiredReceipts: actual, batchSize };
      // Warm up the writer on this table, then alternate: half a second without the sweep, half a
      // second with it (aborted between two batches, resumed in its next phase), until it is done.
      await closedLoop(writer, { concurrency: 1, durationMs: context.warmupMs, warmupMs: 0 });
      collectGarbage();
      // What a phase moved is counted from the tables afterwards: an aborted phase loses its count.
      const sweep: Resumable<undefined> = async (signal) => {
        try {
          await idem.store.housekeeping.sweep({
            now: Date.now(),
            tombstoneTtlMs: 30 * DAY,
            batchSize,
            signal,
            ...(maxDuty === undefined ? {} : { maxDuty }),
          });
          return { done: true, result: undefined };
        } catch (error) {
          if (signal.aborted) return { done: false, result: undefined };
          throw error;
        }
      };
      const measured = await maybeProfiled(context, duringId, () =>
        alternate(writer, sweep, context.quick ? 250 : 500, maxSweepMs),
      );
      const swept = count(idem, 'SELECT count(*) AS n FROM idem_tombstones');
      const expiredLeft = count(
        idem,
        `SELECT count(*) AS n FROM idem_operations WHERE expires_at <= ${Date.now()}`,
      );
      if (swept + expiredLeft !== actual || (measured.done && expiredLeft !== 0)) {
        throw new Error(
          `the sweep left ${expiredLeft} of ${actual} expired receipts and wrote ${swept} tombstones`,
        );
      }
      const partial = measured.done
        ? ''
        : `, stopped after ${Math.round(measured.jobSeconds)} s of sweeping: ${swept.toLocaleString('en-US')} moved`;
      const base: RowResult = {
        id: baseId,
        group,
        system: systemLabel,
        scenario: `writer, no sweep (table of ${formatCount(actual)} expired receipts; phases alternate with the sweep)`,
        concurrency: 1,
        measurement: measured.without,
        extra,
      };
      logRow(context, base);
      rows.push(base);
      const row: RowResult = {
        id: duringId,
        group,
        system: systemLabel,
        scenario: `writer during a sweep (at most ${batchSize} rows a batch, ~0.25 ms each${maxDuty === 1 ? ', no pauses' : ''}${partial})`,
        concurrency: 1,
        baseline: baseId,
        ratioOf: 'p99',
        measurement: measured.during,
        extra: {
          ...extra,
          sweptReceipts: swept,
          sweepPhases: measured.results.length,
          sweepSeconds: Math.round(measured.jobSeconds * 10) / 10,
          sweptPerSecond: Math.round(swept / measured.jobSeconds),
        },
      };
      logRow(context, row);
      rows.push(row);
    } finally {
      await idem.close();
    }
  }
  return rows;
}
