import { fmtRatio } from './report.js';
import type { RowResult } from './types.js';

/** The rows of issue 27: Idem against the naive idempotent transaction of the same run. */
const LINES: readonly { label: string; idem: string; naive: string; levels: readonly number[] }[] = [
  {
    label: 'SQLite FULL, first execution',
    idem: 'sqlite-full/idem/first',
    naive: 'sqlite-full/naive/first',
    levels: [1, 8, 64],
  },
  {
    label: 'SQLite FULL, replay',
    idem: 'sqlite-full/idem/replay',
    naive: 'sqlite-full/naive/replay',
    levels: [1, 8],
  },
  {
    label: 'SQLite NORMAL, first execution',
    idem: 'sqlite-normal/idem/first',
    naive: 'sqlite-normal/naive/first',
    levels: [1, 8, 64],
  },
  {
    label: 'SQLite NORMAL, replay',
    idem: 'sqlite-normal/idem/replay',
    naive: 'sqlite-normal/naive/replay',
    levels: [1, 8],
  },
  {
    label: 'PostgreSQL, first execution',
    idem: 'pg/idem/first',
    naive: 'pg/naive/first',
    levels: [1, 8, 64],
  },
  { label: 'PostgreSQL, replay', idem: 'pg/idem/replay', naive: 'pg/naive/replay', levels: [1, 8, 64] },
];

/**
 * The table of Idem's throughput over the naive idempotent transaction's (look the receipt up,
 * insert the note, insert the receipt, commit), at 1, 8 and 64 in flight, and for the storm of 64
 * callers on one key: ratios of rows measured in this run, `-` where a row was not measured.
 */
export function naiveTable(rows: readonly RowResult[]): string[] {
  const ops = new Map(
    rows.flatMap((r) => (r.measurement === undefined ? [] : [[r.id, r.measurement.opsPerSec]])),
  );
  const ratio = (idem: string, naive: string): string => {
    const a = ops.get(idem);
    const b = ops.get(naive);
    return a === undefined || b === undefined ? '-' : fmtRatio(a / b);
  };
  return [
    '| Idem ÷ naive (ops/s) | 1 in flight | 8 in flight | 64 in flight |',
    '| --- | ---: | ---: | ---: |',
    ...LINES.map(
      (line) =>
        `| ${line.label} | ${[1, 8, 64]
          .map((c) => (line.levels.includes(c) ? ratio(`${line.idem}/c${c}`, `${line.naive}/c${c}`) : '-'))
          .join(' | ')} |`,
    ),
    `| SQLite FULL, 64 callers storming one key | | | ${ratio('sqlite-full/idem/storm/c64', 'sqlite-full/naive/storm/c64')} |`,
  ];
}

/**
 * What stands between Idem and the naive transaction on each missed row, measured (issue 27), and
 * the design change each would take: text under the generated table.
 */
export const NAIVE_SPLIT: readonly string[] = [
  'Both sides of each ratio are measured in the same run, next to each other; an A/A quick run on this machine',
  'spans 0.72 to 1.20 per row, so a single quick run decides nothing near 1. Every row keeps its guarantees:',
  'synchronous=FULL commits fsync before answering, PostgreSQL runs with `synchronous_commit = on`, every replay',
  'is authorized first, checks the fingerprint, finds tombstones and every version of the key, and reads the',
  'database (nothing is cached, so an operator’s resolution is seen by the next replay).',
  '',
  '**Where the time goes** (profiles with `node --cpu-prof` of a driver running `Executor.run`; statement timings',
  'with a timer around every query; issue 27):',
  '',
  '- **SQLite replay**: 57% of the CPU is the lookup statement itself (better-sqlite3 and SQLite: in WAL mode each',
  '  statement outside a transaction takes and drops the WAL read lock). The lookup costs 9.5 µs, a bare',
  '  primary-key SELECT of the same columns 8.8 µs; the rest is Idem’s JavaScript spread thin: the attempt id',
  '  (random UUID and hex, ~3.5%), the executor (2.2%), parsing the stored result (2%), the `idem.call` line',
  '  (1.5%), canonical JSON and SHA-256 of the fingerprint (2.4%). The naive replay (BEGIN IMMEDIATE, SELECT,',
  '  COMMIT, SHA-256, JSON.parse) does the same work in other places, so the ratio sits near 1 and moves with',
  '  the machine.',
  '- **SQLite NORMAL, first execution at 1 in flight**: the storage alone decides it. Idem’s receipt row lives in',
  '  a table with more B-trees (the row, the identity primary key, the unique operation id, the expiry) than the',
  '  naive receipt (one primary key): the receipt storage floor (`receipt-floor`, no Idem code) already runs at',
  '  0.58x of the naive transaction, and Idem at 0.64x of that floor.',
  '- **PostgreSQL first execution**: the same 5 round trips as the naive transaction (lookup; BEGIN with',
  '  `lock_timeout` and the advisory lock; note; receipt; COMMIT against BEGIN; SELECT … FOR UPDATE; note; receipt;',
  '  COMMIT) and the same system calls (3 `writev` and 2 `write` per call). Per statement, one caller, 1,000',
  '  calls: the lookup 355–423 µs against the naive BEGIN 121–138 µs (the lookup probes the own version, then both',
  '  tables over every version, and a first execution always takes the long way); BEGIN with the lock 188–326 µs',
  '  against the naive SELECT … FOR UPDATE 132–265 µs; the guarded receipt insert 244–408 µs against 136–157 µs',
  '  (it checks records and tombstones in every version, and writes a wide row with its indexes); COMMIT',
  '  1,174–1,577 µs against 715–1,104 µs (Idem’s transaction wrote 2.1x the WAL: 1,520 bytes against 710 per call).',
  '  The advisory lock and `SET LOCAL lock_timeout` ride in the BEGIN’s round trip and cost little.',
  '- **PostgreSQL replay at 64 in flight**: the pool (10 connections) is the bottleneck, so what a connection is',
  '  held for decides: the naive replay is one unprepared primary-key SELECT of one column; Idem’s lookup is one',
  '  named statement, but a compound one (the own version, else every version of both tables, sorted), whose',
  '  executor start-up touches five relations where the naive SELECT touches two: 25–32 µs of server time per',
  '  lookup, hit or miss, against 11–16 µs for a primary-key SELECT of the same columns (`EXPLAIN ANALYZE` of the',
  '  generic plan, median of 400). The rest of the gap is on the Node side, which shares the two cores with the',
  '  backends: the executor’s work and a pooled client taken and given back, against one `pool.query`.',
  '- **The storm (64 callers, one key, SQLite FULL)**: the naive transaction answers the 63 losers one after',
  '  the other inside the same event-loop turn, each a BEGIN IMMEDIATE, a SELECT and a COMMIT with nothing to',
  '  fsync. Idem looks up 64 times (all miss), queues 64 writes for one group commit, and inside it each loser',
  '  looks again under its own SAVEPOINT and decides to replay: one fsync for all, but 64 lookups more.',
  '',
  '**Changed (issue 27)**: the primary keys of `idem_operations` and `idem_tombstones` now run in key order',
  '(principal, workspace, operation, idem_key, version), so that one index serves the own version, ON CONFLICT and',
  'the key in every version, and the separate key index is gone (PostgreSQL schema 4, SQLite schema 5). A first',
  'execution writes 7.3 WAL pages on SQLite instead of 8.7 (NORMAL, checkpoints held back, 2,000 calls), and its',
  'receipt insert on PostgreSQL 6 WAL records and about 850 bytes instead of 7 and 1,050 (`EXPLAIN (ANALYZE, WAL)`,',
  'full-page images aside, of which it now also causes one random leaf fewer after each checkpoint).',
  '',
  '**What would close the rest** (not done; each changes more than it can prove in one session):',
  '',
  '- PostgreSQL first execution, replay at 64: a PL/pgSQL function `idem_find` (a schema object, migrated) that',
  '  runs the own-version probe and only on a miss the every-version query, each a cached plan: a replay would',
  '  start one index scan instead of five relations (about half of those 25–32 µs). Cost: one more migration',
  '  and a function per schema, and',
  '  `search_path` handling for it. Beyond that, pipelining (the lookup sent with the BEGIN; node-postgres does',
  '  not pipeline, so a driver change) or group commit across calls as on SQLite (one COMMIT and fsync for',
  '  several calls; a caller waits for its batch).',
  '- SQLite NORMAL at 1 in flight: fewer B-trees on the receipts table (the expiry index could go if the sweep',
  '  walked operation ids, which start with their creation time, at the price of a sweep that must then read',
  '  each row’s expiry), or a narrower row (the result stored once, not with its envelope).',
  '- The storm: coalescing concurrent lookups of one identity (one query in flight per identity, each caller',
  '  served by a read that started after it arrived), and inside a group commit deciding the losers of one',
  '  identity from the winner’s record without looking again. Cost: a per-identity map of reads in flight, and',
  '  care that no answer predates its caller.',
];
