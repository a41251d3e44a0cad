/**
 * `npm run bench [-- --quick] [--only REGEX] [--suites a,b] [--reps N] [--duration MS] [--no-profile] [--no-write]`
 * `npm run bench -- --baseline REV [--pairs N] [--max-drop 0.1] [--quick] [--only ...] [--suites ...]`
 *
 * Runs every suite (each in its own Node process), prints a table, evaluates the targets of issue 6
 * on ratios measured in this run, profiles the rows behind missed targets (V8 CPU profiler), and
 * writes bench/results/latest.{json,md,svg} and docs/benchmarks.md. `--render` rewrites the reports
 * from bench/results/latest.json without measuring anything. `--baseline REV` compares this checkout
 * with another commit in one run: it builds that commit's benchmark (bench/lib/baseline.ts), runs
 * each suite N times in each build, alternating (baseline first, then this one first, ...), and
 * prints the median ops/s of every row in both and their ratio, marking Idem's first-execution and
 * replay rows more than `--max-drop` below; it writes no report.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import * as prettier from 'prettier';
import { buildBaseline, collect, comparisonTable } from './lib/baseline.js';
import { probeFsyncUs } from './lib/disk-probe.js';
import { summarizeProfile, type ProfileSummary } from './lib/profile.js';
import { redisMissing, redisVersion } from './lib/redis.js';
import {
  fmtNum,
  fmtRatio,
  fmtUs,
  metaSection,
  profilesSection,
  rowsTables,
  targetsTable,
  textTable,
  type Results,
  type RunMeta,
} from './lib/report.js';
import { NAIVE_SPLIT, naiveTable } from './lib/naive-table.js';
import { renderChart } from './lib/svg.js';
import { evaluate, targets, type TargetResult } from './lib/targets.js';
import type { RowResult } from './lib/types.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const ROOT = join(HERE, '..', '..');
const WORKER = join(HERE, 'worker.js');
const SUITE_ORDER = [
  'sqlite-full',
  'sqlite-normal',
  'postgres',
  'powertools',
  'mcp',
  'receipts',
  'sweep',
  'sweep-load',
];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    suites: { type: 'string' },
    reps: { type: 'string' },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    profile: { type: 'boolean' },
    'no-profile': { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
    render: { type: 'boolean', default: false },
    'pg-url': { type: 'string' },
    baseline: { type: 'string' },
    pairs: { type: 'string' },
    'max-drop': { type: 'string' },
  },
});

const quick = values.quick ?? false;
const settings = {
  durationMs: Number(values.duration ?? (quick ? 250 : 800)),
  warmupMs: Number(values.warmup ?? (quick ? 50 : 200)),
  reps: Number(values.reps ?? (quick ? 1 : 3)),
};
const profileMisses = values.profile ?? (!quick && !values['no-profile']);
const pgUrl =
  values['pg-url'] ?? process.env.IDEM_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const suites = values.suites === undefined ? SUITE_ORDER : values.suites.split(',').map((s) => s.trim());
/** Bound on one suite's process: it is killed past this. */
const SUITE_TIMEOUT_MS = quick ? 90_000 : 1_500_000;

let current: ReturnType<typeof spawn> | undefined;
process.on('SIGINT', () => {
  current?.kill('SIGTERM');
  process.exit(130);
});

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

/** Runs one suite in a child process and returns its rows (a failed suite gives one skipped row). */
async function runSuite(
  suite: string,
  tmpRoot: string,
  options: {
    only?: string;
    profileRow?: string;
    profileOut?: string;
    durationMs?: number;
    reps?: number;
    /** Another build's suite worker (`--baseline`); this checkout's by default. */
    worker?: string;
  } = {},
): Promise<RowResult[]> {
  const dir = mkdtempSync(join(tmpRoot, `${suite}-`));
  const out = join(dir, 'rows.json');
  const args = {
    suite,
    out,
    context: {
      quick,
      durationMs: options.durationMs ?? settings.durationMs,
      warmupMs: settings.warmupMs,
      reps: options.reps ?? settings.reps,
      tmpDir: dir,
      pgUrl,
      ...(options.only === undefined ? {} : { only: options.only }),
      ...(options.profileRow === undefined
        ? {}
        : { profileRow: options.profileRow, profileOut: options.profileOut }),
    },
  };
  const child = spawn(process.execPath, ['--expose-gc', options.worker ?? WORKER, JSON.stringify(args)], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  current = child;
  const timer = setTimeout(() => {
    log(`suite ${suite} exceeded ${SUITE_TIMEOUT_MS / 1000} s; stopping it`);
    child.kill('SIGKILL');
  }, SUITE_TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  current = undefined;
  try {
    if (code !== 0 || !existsSync(out)) {
      return [
        {
          id: `${suite}/failed`,
          group: suite,
          system: suite,
          scenario: 'suite',
          concurrency: 0,
          skipped: `the suite process failed (exit ${String(code)}); see the log above`,
        },
      ];
    }
    return JSON.parse(readFileSync(out, 'utf8')) as RowResult[];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function versions(): Promise<Record<string, string>> {
  const pkg = (name: string) => {
    try {
      return (
        JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as {
          version: string;
        }
      ).version;
    } catch {
      return 'absent';
    }
  };
  const memory = new Database(':memory:');
  const sqlite = (memory.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
  memory.close();
  let postgres = 'unreachable';
  const client = new pg.Client({ connectionString: pgUrl, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    postgres =
      (
        (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version ?? '?'
      ).split(' ')[0] ?? '?';
  } catch {
    // reported as unreachable
  } finally {
    await client.end().catch(() => undefined);
  }
  return {
    SQLite: sqlite,
    'better-sqlite3': pkg('better-sqlite3'),
    PostgreSQL: postgres,
    pg: pkg('pg'),
    'redis-server': redisMissing() === undefined ? redisVersion() : 'absent',
    '@aws-lambda-powertools/idempotency': pkg('@aws-lambda-powertools/idempotency'),
    '@redis/client': pkg('@redis/client'),
    '@modelcontextprotocol/server': pkg('@modelcontextprotocol/server'),
    '@modelcontextprotocol/client': pkg('@modelcontextprotocol/client'),
  };
}

/** A sentence or two per target, built from this run's figures, for the misses section. */
function explanations(rows: readonly RowResult[], results: readonly TargetResult[]): Record<string, string> {
  const m = (id: string) => rows.find((r) => r.id === id)?.measurement;
  const x = (id: string, key: string) => rows.find((r) => r.id === id)?.extra?.[key];
  const out: Record<string, string> = {};
  /** How much of the gap the receipt's storage explains, and how much Idem's code adds. */
  const split = (s: 'full' | 'normal'): string => {
    const floor = m(`sqlite-${s}/floor/first/c1`);
    const storage = m(`sqlite-${s}/receipt-floor/first/c1`);
    const idem = m(`sqlite-${s}/idem/first/c1`);
    // The checkpoint modes that are not this level's default (FULL: adaptive; NORMAL: background).
    const inline = m(`sqlite-${s}/idem-inline/first/c1`);
    const background = m(`sqlite-${s}/idem-bg/first/c1`);
    if (floor === undefined || storage === undefined || idem === undefined) return '';
    const of = (row: { opsPerSec: number } | undefined): string =>
      row === undefined ? '?' : fmtRatio(row.opsPerSec / floor.opsPerSec);
    return (
      ` Split: writing the same note and receipt row straight into Idem's schema, with none of Idem's code, already runs at ${fmtRatio(storage.opsPerSec / floor.opsPerSec)} of the floor (\`sqlite-${s}/receipt-floor/first/c1\`, ${String(x(`sqlite-${s}/receipt-floor/first/c1`, 'walPagesPerCall') ?? '?')} WAL pages per call); ` +
      `Idem's code (executor, lookups, group-commit queue) then runs at ${fmtRatio(idem.opsPerSec / storage.opsPerSec)} of that storage floor` +
      (s === 'full'
        ? `. With one caller the default \`checkpoint: 'adaptive'\` leaves checkpoints to SQLite on the committing thread; \`'inline'\` runs at ${of(inline)} of the floor and \`'background'\` (a worker thread copies the WAL every 4,000 pages, with fsyncs of the database file that share the disk with the caller's own) at ${of(background)}.`
        : `, with its checkpoints on a worker thread (the default at NORMAL); with SQLite's own checkpoints on the committing thread, as the floors have them (\`checkpoint: 'inline'\`), Idem runs at ${of(inline)} of the floor.`)
    );
  };
  /** What the naive idempotent transaction (lookup, insert, insert, commit) reached against the same baseline. */
  const naiveReach = (id: string, baseline: { opsPerSec: number }): string => {
    const naive = m(id);
    return naive === undefined
      ? ''
      : ` The naive idempotent transaction on the driver (\`${id}\`: one lookup, the note, a receipt row with one index, COMMIT) ran at ${fmtRatio(naive.opsPerSec / baseline.opsPerSec)} of the same baseline in this run.`;
  };
  const floorFull = m('sqlite-full/floor/first/c1');
  const idemFull = m('sqlite-full/idem/first/c1');
  if (floorFull !== undefined && idemFull !== undefined) {
    out['first-full-c1'] =
      `At synchronous=FULL every COMMIT waits for an fsync; the floor's p50 is ${fmtUs(floorFull.p50Us)} and Idem's ${fmtUs(idemFull.p50Us)}. ` +
      `Idem appends ${String(x('sqlite-full/idem/first/c1', 'walPagesPerCall') ?? '?')} WAL pages per call against ${String(x('sqlite-full/floor/first/c1', 'walPagesPerCall') ?? '?')} for the floor (the receipt row and its three indexes: the identity primary key, the unique operation_id and expires_at), and adds the fixed CPU work of an idempotent call (key check, fingerprint, two lookups, receipt upsert). ` +
      "The CPU profile shows most of the time in SQLite's C code under `#tryBatch` (the COMMIT: WAL write and fsync) and Idem's own JavaScript at a few percent." +
      naiveReach('sqlite-full/naive/first/c1', floorFull) +
      split('full');
  }
  const floorNormal = m('sqlite-normal/floor/first/c1');
  const idemNormal = m('sqlite-normal/idem/first/c1');
  if (floorNormal !== undefined && idemNormal !== undefined) {
    const pages = (id: string) => String(x(id, 'walPagesPerCall') ?? '?');
    out['first-normal-c1'] =
      `At synchronous=NORMAL a COMMIT does not wait for the disk, so the floor costs one INSERT and the write() of its WAL pages (p50 ${fmtUs(floorNormal.p50Us)}). ` +
      `Each Idem first execution appends ${pages('sqlite-normal/idem/first/c1')} pages to the WAL against ${pages('sqlite-normal/floor/first/c1')} for the floor and ${pages('sqlite-normal/naive/first/c1')} for the naive transaction: the receipt row lives in a table with four B-trees (the row, the identity primary key, the unique operation_id and expires_at), and more pages per commit also mean more checkpoints (which do fsync at NORMAL; Idem runs them on a worker thread, so a caller waits for none). ` +
      `On top come the fixed CPU costs of an idempotent call — key validation, canonical JSON and SHA-256, the lock-free lookup, the lookup again under the lock, the result JSON and ids — so Idem's p50 is ${fmtUs(idemNormal.p50Us)}.` +
      naiveReach('sqlite-normal/naive/first/c1', floorNormal) +
      split('normal') +
      " In the CPU profile a JS function's self time includes the SQLite work it calls synchronously (`#tryBatch`: BEGIN and COMMIT with its WAL writes and checkpoints; the store's commit body: the lookup and the receipt upsert). Measured while choosing the schema: a WITHOUT ROWID table keyed by the identity writes as many pages (its wide rows split leaves more often), so the remaining lever would be fewer indexes than the three lookups need (by identity, by operation id, by expiry).";
  }
  const gc = m('sqlite-full/idem/first/c64');
  const nogc = m('sqlite-full/idem-nogc/first/c64');
  if (gc !== undefined && floorFull !== undefined) {
    const storage64 = m('sqlite-full/receipt-floor/first/c64');
    const inline64 = m('sqlite-full/idem-inline/first/c64');
    out['group-commit-c64'] =
      `With group commit, 64 calls in flight reach ${fmtNum(gc.opsPerSec)} first executions/s (without it: ${fmtNum(nogc?.opsPerSec)}), against the floor's ${fmtNum(floorFull.opsPerSec)} at one caller. ` +
      (storage64 === undefined
        ? ''
        : `Writing the same notes and receipts straight into Idem's schema, 64 per transaction and with none of Idem's code, reaches ${fmtNum(storage64.opsPerSec)}/s (${fmtRatio(storage64.opsPerSec / floorFull.opsPerSec)} of the floor): with the fsync shared, a batch is bound by the pages it writes — every call dirties random leaves of the B-trees keyed by random values (the note id, the idempotency key), and the WAL reaches SQLite's checkpoint threshold every few batches. Idem reaches ${fmtRatio(gc.opsPerSec / storage64.opsPerSec)} of that storage bound, its checkpoints on a worker thread while batches carry several calls (\`checkpoint: 'adaptive'\`)${inline64 === undefined ? '' : `; with them inline on the committing thread, as the storage floor has them, ${fmtRatio(inline64.opsPerSec / floorFull.opsPerSec)} of the floor`}. `) +
      "The profile attributes the SQLite work to the JS function that calls it: `#tryBatch` (BEGIN, SAVEPOINT/RELEASE, COMMIT with its WAL write, fsync and checkpoints) and the store's commit body (lookup under the lock, receipt upsert).";
  }
  const pgTrips = x('pg/idem/first/c8', 'roundTripsPerCall');
  const pgFloorTrips = x('pg/floor/first/c8', 'roundTripsPerCall');
  const pgIdem = m('pg/idem/first/c8');
  const pgFloor = m('pg/floor/first/c8');
  const pgFloorTx = m('pg/floor-tx/first/c8');
  const pgReplay = m('pg/idem/replay/c8');
  const unprepared = m('pg/idem-unprepared/first/c8');
  const unpreparedReplay = m('pg/idem-unprepared/replay/c8');
  const receiptFloorPg = m('pg/receipt-floor/first/c8');
  const naivePg = m('pg/naive/first/c8');
  if (pgIdem !== undefined && pgFloor !== undefined) {
    out['postgres-first-c8'] =
      `Idem sends ${String(pgTrips ?? '?')} statements (round trips) per first execution — the lookup (the function \`idem_find\` over receipts and tombstones, taking no row lock, read in one statement with the other lookups that start in its turn; on a pool whose sessions bound lock waits, as here, it needs no transaction of its own), then BEGIN and a try of the identity's advisory lock in one round trip (with \`SET LOCAL lock_timeout\` when the sessions do not have the store's), the note INSERT, the receipt INSERT that writes only where no receipt or tombstone appeared since the lookup, COMMIT (when another call holds the identity's lock: the lock, the lookup again under it and an upsert) — against 3 for the bare insert transaction (BEGIN, INSERT, COMMIT) and ${String(pgFloorTrips ?? '?')} for the autocommit INSERT` +
      (pgFloor === undefined || pgIdem === undefined
        ? '. '
        : ` (Idem runs at ${fmtRatio(pgIdem.opsPerSec / pgFloor.opsPerSec)} of the autocommit INSERT). `) +
      `With 8 in flight the machine's two cores are nearly saturated, shared by the Node process and the PostgreSQL backends (in a separate measurement with \`top\`, each side used about 80% of a core and 14% stayed idle), so a statement costs CPU on both sides: a socket write and a wakeup in Node (the largest items of the profile) and a parse, bind and execute in a backend (p50 ${fmtUs(pgIdem.p50Us)} vs ${fmtUs(pgFloor.p50Us)} for the autocommit INSERT). The count alone does not decide it: the naive idempotent transaction sends as many${receiptFloorPg === undefined || naivePg === undefined ? '' : `, and writing Idem's receipt row into Idem's table in it, with none of Idem's code (\`pg/receipt-floor\`), runs at ${fmtRatio(receiptFloorPg.opsPerSec / naivePg.opsPerSec)} of the naive transaction`}; the rest is Idem's guarded receipt insert, the lookup outside the transaction, the advisory lock and the executor's JavaScript (measured apart under the table against the naive transaction). The lookup and the receipt upsert are named prepared statements, parsed and planned once per connection${unprepared === undefined ? '' : ` (with \`preparedStatements: false\`: ${fmtRatio(unprepared.opsPerSec / pgIdem.opsPerSec)} of this throughput on first executions${unpreparedReplay === undefined || pgReplay === undefined ? '' : `, ${fmtRatio(unpreparedReplay.opsPerSec / pgReplay.opsPerSec)} on replays`})`}. The caller's effect runs between the lock and the receipt, so the lock, the effect, the receipt and COMMIT stay separate round trips; closing the rest of the gap would take group commit across calls as on SQLite, or a driver that pipelines statements.${pgFloorTx === undefined ? '' : naiveReach('pg/naive/first/c8', pgFloorTx)}`;
  }
  const sweepRow = rows.find((r) => r.id === 'sweep/idem/first/during-sweep-b500');
  const sweepBase = m('sweep/idem/first/no-sweep-b500');
  if (sweepRow?.measurement !== undefined && sweepBase !== undefined) {
    const seconds = Number(sweepRow.extra?.sweepSeconds ?? 0);
    const swept = Number(sweepRow.extra?.sweptReceipts ?? 0);
    const ratioOf = (system: string): string => {
      const during = m(`sweep/${system}/first/during-sweep-b500`);
      const base = m(`sweep/${system}/first/no-sweep-b500`);
      return during === undefined || base === undefined
        ? '?'
        : `${fmtRatio(during.p99Us / base.p99Us)} (p99 ${fmtUs(base.p99Us)} → ${fmtUs(during.p99Us)}, p50 ${fmtUs(base.p50Us)} → ${fmtUs(during.p50Us)})`;
    };
    out['sweep-p99'] =
      `The writer and the sweep share SQLite's single write lock and one disk. The writer's figures with and without the sweep come from alternating half-second phases on the same table, so both see the same minutes of the machine. ` +
      `A sweep batch (receipts moved to tombstones: three index-driven statements) is sized to about 0.25 ms of work (up to 1 ms while a backlog is left and no caller waits, never under 16 rows) and then waits as long as it held the write lock, not its wait for it behind the writer (\`maxDuty\` 0.5); it commits without an fsync of its own and never in a caller's transaction; once a sweep passes 8 batches a worker thread checkpoints the WAL every 4,000 pages until it ends. It moved ${fmtNum(swept)} receipts in ${fmtNum(seconds, 1)} s of sweep phases (${fmtNum(seconds === 0 ? undefined : swept / seconds)}/s). ` +
      `The writer's p50 goes from ${fmtUs(sweepBase.p50Us)} to ${fmtUs(sweepRow.measurement.p50Us)}. What remains in its p99 is a batch that was running when it arrived, and its own fsync flushing the WAL pages the sweep wrote since the last one: a durable COMMIT makes everything before it durable, so the sweep's pages are paid for by whichever caller commits next. ` +
      `For comparison, the ratio without pauses (\`maxDuty: 1\`) is ${ratioOf('idem-duty1')}, and with \`checkpoint: 'background'\` (the worker also between sweeps) ${ratioOf('idem-bg')}.`;
  }
  const loadRow = rows.find((r) => r.id === 'sweep-load/idem/writers/during-sweep');
  const loadBase = m('sweep-load/idem/writers/no-sweep');
  if (loadRow?.measurement !== undefined && loadBase !== undefined) {
    const x = (key: string) => Number(loadRow.extra?.[key] ?? Number.NaN);
    const text =
      `Writers create receipts at half of what the store took with 8 in flight (${fmtNum(x('capacityOpsPerSec'))}/s), arriving at a fixed rate whatever their latency (an open loop), in alternating phases with and without the sweep of ${fmtNum(x('expiredReceipts'))} expired receipts on the same table. ` +
      `The sweep moved ${fmtNum(x('sweptPerSecond'))} receipts/s beside them while they created ${fmtNum(x('insertsPerSecond'))}/s (alone: ${fmtNum(x('sweptAlonePerSecond'))}/s); the writers' p50 went from ${fmtUs(loadBase.p50Us)} to ${fmtUs(loadRow.measurement.p50Us)}, their p99 from ${fmtUs(loadBase.p99Us)} to ${fmtUs(loadRow.measurement.p99Us)}. ` +
      "The pause after a batch counts only the time the batch held the write lock: before issue 22 it counted the batch's wait behind the writers' commits too, so the busier the writers, the slower the sweep (340 rows/s beside 950 inserts/s), and on a loaded machine batches shrank to a row or two.";
    out['sweep-load-rate'] = text;
    out['sweep-load-p99'] = text;
  }
  const mcp = results.find((t) => t.id === 'mcp-p50');
  if (mcp !== undefined) {
    out['mcp-p50'] =
      'Over Streamable HTTP a call costs an HTTP request, a fresh stateless McpServer with every reference tool registered, and zod validation (milliseconds); the idempotent path adds the lookup and the receipt (a few hundred microseconds, see the SQLite rows). At 1 in flight both tools commit one fsync per call. With --quick the window holds only a few hundred calls, so the p50 ratio moves from run to run.';
  }
  const sizes = rows.filter((r) => r.id.startsWith('receipts/idem/replay/n') && r.measurement !== undefined);
  const replayFigures = sizes
    .map(
      (r) =>
        `${r.id.slice('receipts/idem/replay/n'.length)}: p50 ${fmtUs(r.measurement?.p50Us)}, p99 ${fmtUs(r.measurement?.p99Us)}`,
    )
    .join('; ');
  for (const id of ['receipts-p99-first', 'receipts-p99-replay']) {
    out[id] =
      `Replays by receipts in the table — ${replayFigures}. A replay takes ten or twenty microseconds, so its p99 moves with scheduling noise on a shared two-core machine, and a ratio of two such p99s grows as the empty table's replay gets faster (issue 27 took its lookup from a compound statement to one primary-key probe, which the empty table's cached pages serve fastest); what really grows with the table is the B-tree depth and the share of index pages that no longer fit SQLite's page cache and are read from the OS page cache, one pread per level. openSqlite sets a 32 MiB page cache (SQLite's default is 2 MiB), which holds the upper levels of the indexes at these sizes, so a replay reads about one leaf per B-tree from the OS. ` +
      "A first execution's p99 is dominated by its fsync and stays flat.";
  }
  const pt1 = m('pt-aof/powertools/first/c1');
  const idemPt1 = m('pt-aof/idem/first/c1');
  const ptText =
    'Powertools keeps its record in Redis and the effect in SQLite: a first execution pays two Redis writes (SET NX "in progress", then SET "completed"), each fsynced before Redis answers (appendfsync always), plus the SQLite fsync of the bare insert it wraps; a replay is a SET NX that fails and a GET (two round trips). ' +
    `Idem pays one fsync per first execution, but of ${String(x('sqlite-full/idem/first/c1', 'walPagesPerCall') ?? '?')} WAL pages (the receipt's B-trees) instead of ${String(x('sqlite-full/floor/first/c1', 'walPagesPerCall') ?? '?')}` +
    (pt1 !== undefined && idemPt1 !== undefined
      ? ` (p50 ${fmtUs(idemPt1.p50Us)} against Powertools' ${fmtUs(pt1.p50Us)})`
      : '') +
    ', so this ratio is bounded by the same receipt storage cost as the first target; on this disk an fsync of a few pages is cheap relative to the extra pages, which narrows the gap.';
  const ceiling =
    pt1 !== undefined && floorFull !== undefined
      ? ` With one caller no design that commits the note and its receipt together can run faster than the bare note insert it wraps: the floor (\`sqlite-full/floor/first/c1\`, measured in the SQLite suite's process) ran at ${fmtRatio(floorFull.opsPerSec / pt1.opsPerSec)} of Powertools' first execution, the ceiling for this ratio on this machine.`
      : '';
  out['powertools-first-c1'] = ptText + ceiling;
  out['powertools-first-c8'] = ptText;
  out['powertools-replay-c1'] = ptText;
  const replay = m('sqlite-full/idem/replay/c1');
  const locked = m('sqlite-full/idem/replay-locked/c1');
  if (replay !== undefined && locked !== undefined) {
    out['replay-lock-free'] =
      `A check of this bench rather than a property of Idem: a replay is a read on the WAL and never asks for the write lock, so a lock held by another connection should leave it unchanged (ratio about 1). Both rows take tens of microseconds a call (p50 ${fmtUs(replay.p50Us)} and ${fmtUs(locked.p50Us)}) and were measured one after the other on a shared two-core machine; earlier full runs gave 1.49x and 1.18x. Calls that did not replay while the lock was held (a \`busy\` answer, say): ${fmtNum(locked.errors)}; the contract suite asserts the same on every run.`;
  }
  return out;
}

async function profileMissed(
  results: readonly TargetResult[],
  rows: readonly RowResult[],
  tmpRoot: string,
): Promise<Record<string, ProfileSummary>> {
  const profiles: Record<string, ProfileSummary> = {};
  for (const target of results) {
    if (target.met !== false || target.profileRow === undefined) continue;
    if (profiles[target.profileRow] !== undefined) continue;
    const row = rows.find((r) => r.id === target.profileRow);
    const suite = SUITE_ORDER.find((s) => (row?.id ?? '').startsWith(suitePrefix(s)));
    if (suite === undefined) continue;
    const dir = mkdtempSync(join(tmpRoot, 'profile-'));
    const file = join(dir, 'row.cpuprofile');
    log(`profiling ${target.profileRow} (missed: ${target.label})`);
    await runSuite(suite, tmpRoot, {
      only: `^${target.profileRow.replaceAll('/', '\\/')}$`,
      profileRow: target.profileRow,
      profileOut: file,
      durationMs: quick ? 1000 : 3000,
      reps: 1,
    });
    if (!existsSync(file)) {
      log(`  no CPU profile was written for ${target.profileRow}`);
    } else {
      const summary = summarizeProfile(file);
      profiles[target.profileRow] = summary;
      for (const area of summary.areas.slice(0, 5))
        log(`  ${area.selfPct.toFixed(1).padStart(5)}%  ${area.name}`);
    }
    rmSync(dir, { recursive: true, force: true });
  }
  return profiles;
}

function suitePrefix(suite: string): string {
  return (
    {
      'sqlite-full': 'sqlite-full/',
      'sqlite-normal': 'sqlite-normal/',
      postgres: 'pg/',
      powertools: 'pt-',
      mcp: 'mcp/',
      receipts: 'receipts/',
      sweep: 'sweep/',
      'sweep-load': 'sweep-load/',
    } as Record<string, string>
  )[suite] as string;
}

async function format(text: string, parser: 'markdown' | 'json', file: string): Promise<string> {
  const config = (await prettier.resolveConfig(file)) ?? {};
  return prettier.format(text, { ...config, parser, filepath: file });
}

function reportMarkdown(results: Results, chartPath: string): string {
  const met = results.targets.filter((t) => t.met === true).length;
  const missed = results.targets.filter((t) => t.met === false).length;
  const absent = results.targets.filter((t) => t.met === undefined).length;
  return [
    '# Idem benchmark report',
    '',
    `Generated by \`npm run bench${results.meta.mode === 'quick' ? ' -- --quick' : ''}\`; do not edit by hand. ${met} targets met, ${missed} missed${absent > 0 ? `, ${absent} not measured` : ''}.`,
    '',
    metaSection(results.meta),
    '',
    `![Ratios against targets, and first-execution throughput](${chartPath})`,
    '',
    '## Targets',
    '',
    targetsTable(results),
    '',
    '## Missed targets: why',
    '',
    profilesSection(results),
    '',
    '## Every row',
    '',
    'Throughput is calls completed per second in the measured window; p50/p99 are per-call latencies (from the call to its answer, queueing included). The ratio compares each row with the baseline named beside it, measured in the same run (throughput unless p50/p99 is named; for latency ratios lower is better).',
    '',
    rowsTables(results),
  ].join('\n');
}

/** One paragraph per missed target for docs/benchmarks.md (profiles stay in the full report). */
function missedSummary(results: Results): string[] {
  const missed = results.targets.filter((t) => t.met === false);
  if (missed.length === 0) return ['Every measured target was met in this run.'];
  return [
    '### Missed targets',
    '',
    ...missed.flatMap((t) => [
      `- **${t.label}: ${fmtRatio(t.ratio)}** (target ${t.op === '>=' ? '≥' : '≤'} ${t.threshold}x). ${results.explanations[t.id] ?? ''}`,
    ]),
    '',
    'CPU profiles of the rows behind these misses (V8 CPU profiler over the measured window, the format of `node --cpu-prof`) are in the [full report](../bench/results/latest.md#missed-targets-why).',
  ];
}

function docsMarkdown(results: Results): string {
  const met = results.targets.filter((t) => t.met === true).length;
  const missed = results.targets.filter((t) => t.met === false).length;
  return [
    '# Benchmarks',
    '',
    '<!-- Generated by `npm run bench` (bench/main.ts, with bench/notes/measured-by-hand.md); edit those, not this file. -->',
    '',
    'How fast is a retry-safe call compared with the same write without idempotency, with a naive',
    'idempotent transaction, and with AWS Lambda Powertools idempotency on Redis? Each figure below is a ratio',
    'measured in one run on one machine, so that the machine cancels out.',
    '',
    '```sh',
    'npm run bench              # every suite, 3 repetitions per row, profiles of missed targets (9 to 18 minutes: the disk sets it)',
    'npm run bench -- --quick   # smaller tables, shorter windows, no comparison-only rows: under a minute',
    'npm run bench -- --only "sqlite-full/(floor|idem)/first"   # some rows only; --suites sqlite-full,postgres',
    'npm run bench:split        # where a replay and a storm spend their time (by hand, printed only)',
    'npm run bench:split:pg     # PostgreSQL replays and first executions, piece by piece, alternating',
    'npm run bench:ab -- REV    # SQLite replays (MODE=first: first executions) of this checkout against REV, alternating',
    '```',
    '',
    'The bench is TypeScript under `bench/`, compiled by `tsconfig.bench.json` into `dist-bench/` (not part of',
    '`npm test`). It writes [bench/results/latest.json](../bench/results/latest.json), the full report',
    '[bench/results/latest.md](../bench/results/latest.md) with every row, and the chart below. PostgreSQL rows use',
    '`postgres://postgres@127.0.0.1:5432/test` (or `$IDEM_BENCH_DATABASE_URL`) in a throwaway schema; the Powertools',
    'rows start their own `redis-server` on a free loopback port and are skipped, with the reason printed, when it is',
    'not installed.',
    '',
    `## Latest run: ${met} of ${results.targets.length} targets met${missed > 0 ? `, ${missed} missed` : ''}`,
    '',
    metaSection(results.meta),
    '',
    '![Ratios against targets, and first-execution throughput](../bench/results/latest.svg)',
    '',
    targetsTable(results),
    '',
    ...missedSummary(results),
    '',
    '## Against the naive idempotent transaction',
    '',
    `From the latest run above (${results.meta.date.slice(0, 10)}, \`${results.meta.mode === 'quick' ? 'npm run bench -- --quick' : 'npm run bench'}\`):`,
    '',
    ...naiveTable(results.rows),
    '',
    ...NAIVE_SPLIT,
    '',
    '## What is compared',
    '',
    '- **Floor**: the same note INSERT in one bare transaction per call, no idempotency (SQLite WAL at',
    "  synchronous=FULL and NORMAL; PostgreSQL BEGIN/INSERT/COMMIT, the target's baseline, and autocommit).",
    '- **Naive idempotent transaction** on the driver: look the receipt up, insert the note, insert the receipt,',
    '  commit (SQLite: inside BEGIN IMMEDIATE, so even a replay takes the write lock).',
    "- **Receipt storage floor** (SQLite): the note and a receipt row written straight into Idem's own schema in",
    "  one transaction, with none of Idem's code, one call per transaction and 64 per transaction: what the",
    "  receipt's B-trees cost, separated from what Idem's code costs. On PostgreSQL (`pg/receipt-floor`): the",
    "  naive idempotent transaction (its five round trips) with its lookup and receipt in Idem's table and row.",
    '- **Powertools**: `@aws-lambda-powertools/idempotency` 2.33.0 (the last release for Node 20) with its Redis',
    '  persistence layer (`@redis/client`), wrapping the same SQLite insert; Redis with `appendonly yes` +',
    '  `appendfsync always` beside SQLite FULL (equal durability), and without persistence beside SQLite NORMAL.',
    '  It runs with `lambdaContext: { getRemainingTimeInMillis: () => 30000 }` and an explicit `keyPrefix`, as it',
    '  must outside Lambda, and without payload validation, which 2.33.0 breaks on the cache layer',
    '  (upstream issue #5705).',
    '- **Idem** through its library API (`Executor` + `SqliteStore` / `PostgresStore`), and end to end through',
    '  the reference MCP server over Streamable HTTP against a plain `create_note_plain` tool registered only in',
    '  the bench’s own server.',
    '- **Scenarios**: first execution and replay at 1, 8 and 64 calls in flight; 64 callers storming one key;',
    '  receipts tables of 0, 1M and 5M rows (prefilled in one bulk transaction; `--quick`: 0 and 100k); the',
    '  sweeper moving 1M expired receipts to tombstones (`--quick`: 10k) while a writer runs, in alternating',
    '  phases, with the defaults, and for at most 40 s of sweeping each without pauses and with `checkpoint:',
    "  'background'`; the sweep of 200k expired receipts (`--quick`: 20k) beside writers arriving at half the",
    "  store's measured capacity (`sweep-load`); replays while another connection holds the write lock.",
    '- **Time-ordered ids, schema 2**: operation ids start with their creation time, so they append to their',
    '  index; the receipts table has three indexes (identity, operation id, expiry) after dropping created_at.',
    "- **WAL checkpoints**: at FULL Idem keeps SQLite's own checkpoint (every 1,000 pages, on the committing",
    '  thread), as the floors do, while calls commit one at a time, and hands them to a worker thread (every',
    "  4,000 pages) while group commits carry several calls and during a long sweep (`checkpoint: 'adaptive'`);",
    "  at NORMAL the worker does them all (`checkpoint: 'background'`). The `idem-inline` and `idem-bg` (FULL)",
    '  rows show the other settings.',
    '',
    '## Group commit on SQLite',
    '',
    'better-sqlite3 is synchronous: a COMMIT at synchronous=FULL blocks the event loop for its fsync, and the',
    'writes that callers issue meanwhile queue up in `SqliteTransactor`. When the queue is served (on the next',
    'turn of the event loop, so that callers ready in this turn join), every queued write, up to `maxBatch`',
    '(64), runs in one `BEGIN IMMEDIATE … COMMIT`, each inside its own `SAVEPOINT`:',
    '',
    '- a write that throws is rolled back to its savepoint and fails alone; the others are released and',
    '  committed together, so one fsync serves the whole batch;',
    '- no caller is answered before the COMMIT that made its receipt durable (failed calls included);',
    '- `before_commit` fires per call inside its savepoint (a throw rolls back that call only), `after_commit`',
    '  per call after the batch COMMIT (a throw makes that call `outcome_unknown`, its data committed);',
    '- if SQLite abandons the whole transaction (I/O error, SQLITE_FULL), the calls before the failing one are',
    '  reported rolled back and the calls after it go back to the head of the queue;',
    '- a batch waiting for the write lock takes in calls that arrive meanwhile; each call still gets `busy`',
    '  after its own `lockTimeoutMs`.',
    '',
    '`SqliteStoreOptions.groupCommit` is `true`, `false` or `{ maxBatch, gather }`. By default a batch waits one',
    'event-loop turn for companions where a COMMIT waits for the disk (synchronous=FULL or EXTRA, or a rollback',
    'journal); for WAL at NORMAL it is adaptive: a lone caller commits at once (a microtask, no added latency),',
    'and only when the previous batch carried several writes, or several are queued, does a batch wait a turn.',
    '`false` commits every write alone. Tests: `test/faults/group-commit.test.ts`.',
    '',
    readFileSync(join(ROOT, 'bench', 'notes', 'measured-by-hand.md'), 'utf8'),
  ].join('\n');
}

async function writeReports(results: Results): Promise<void> {
  const resultsDir = join(ROOT, 'bench', 'results');
  mkdirSync(resultsDir, { recursive: true });
  const jsonPath = join(resultsDir, 'latest.json');
  writeFileSync(jsonPath, await format(JSON.stringify(results), 'json', jsonPath));
  writeFileSync(
    join(resultsDir, 'latest.svg'),
    renderChart(
      results.targets,
      results.rows,
      `Idem benchmark (${results.meta.mode}, ${results.meta.date.slice(0, 10)}): ratios measured in one run`,
    ),
  );
  const mdPath = join(resultsDir, 'latest.md');
  writeFileSync(mdPath, await format(reportMarkdown(results, 'latest.svg'), 'markdown', mdPath));
  const docsPath = join(ROOT, 'docs', 'benchmarks.md');
  writeFileSync(docsPath, await format(docsMarkdown(results), 'markdown', docsPath));
  log(
    'wrote bench/results/latest.json, bench/results/latest.md, bench/results/latest.svg and docs/benchmarks.md',
  );
}

/** Rewrites the reports from the last run's results (targets and explanations recomputed). */
async function render(): Promise<void> {
  const saved = JSON.parse(readFileSync(join(ROOT, 'bench', 'results', 'latest.json'), 'utf8')) as Results;
  const largest = saved.meta.mode === 'quick' ? '100k' : '5M';
  const evaluated = evaluate(targets(largest), saved.rows);
  await writeReports({ ...saved, targets: evaluated, explanations: explanations(saved.rows, evaluated) });
}

/** `--baseline REV`: this checkout against another commit, suite by suite, alternating builds. */
async function compare(rev: string): Promise<void> {
  const pairs = Number(values.pairs ?? 2);
  const maxDrop = Number(values['max-drop'] ?? 0.1);
  if (!Number.isInteger(pairs) || pairs < 1)
    throw new Error(`--pairs must be a positive integer, got ${values.pairs}`);
  if (!(maxDrop >= 0 && maxDrop < 1))
    throw new Error(`--max-drop must be in [0, 1), got ${values['max-drop']}`);
  log(`idem bench: building the baseline ${rev}`);
  const baseline = buildBaseline(ROOT, rev);
  const tmpRoot = mkdtempSync(join(tmpdir(), 'idem-bench-'));
  const measured = new Map<string, { baseline: number[]; current: number[] }>();
  const only = values.only === undefined ? {} : { only: values.only };
  try {
    log(
      `idem bench: ${quick ? 'quick' : 'full'} comparison with ${baseline.sha.slice(0, 12)}, ${pairs} runs of each build per suite, alternating; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    for (const suite of suites) {
      if (!SUITE_ORDER.includes(suite))
        throw new Error(`unknown suite ${suite}; known: ${SUITE_ORDER.join(', ')}`);
      for (let pair = 0; pair < pairs; pair++) {
        const order: ('baseline' | 'current')[] =
          pair % 2 === 0 ? ['baseline', 'current'] : ['current', 'baseline'];
        for (const side of order) {
          log(`suite ${suite} (${side}, run ${pair + 1} of ${pairs})`);
          const options = side === 'baseline' ? { ...only, worker: baseline.worker } : only;
          collect(measured, side, await runSuite(suite, tmpRoot, options));
        }
      }
    }
  } finally {
    rmSync(tmpRoot, { recursive: true, force: true });
  }
  const { text, below } = comparisonTable(measured, maxDrop);
  process.stdout.write(`${text}\n\n`);
  process.stdout.write(
    below.length === 0
      ? `No Idem first-execution or replay row is more than ${Math.round(maxDrop * 100)}% below ${rev}.\n`
      : `${below.length} Idem first-execution or replay row(s) more than ${Math.round(maxDrop * 100)}% below ${rev}: ${below.join(', ')}\n`,
  );
}

async function main(): Promise<void> {
  if (values.render) return render();
  if (values.baseline !== undefined) return compare(values.baseline);
  const started = performance.now();
  const loadBefore = loadavg();
  const tmpRoot = mkdtempSync(join(tmpdir(), 'idem-bench-'));
  const fsyncUsBefore = probeFsyncUs(tmpRoot);
  const rows: RowResult[] = [];
  try {
    log(
      `idem bench: ${quick ? 'quick' : 'full'} run, suites ${suites.join(', ')}; load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')}; fsync of a page ${fmtUs(fsyncUsBefore)}`,
    );
    for (const suite of suites) {
      if (!SUITE_ORDER.includes(suite))
        throw new Error(`unknown suite ${suite}; known: ${SUITE_ORDER.join(', ')}`);
      log(`suite ${suite}`);
      rows.push(...(await runSuite(suite, tmpRoot, values.only === undefined ? {} : { only: values.only })));
    }
    const receiptSizes = rows
      .filter((r) => r.id.startsWith('receipts/idem/first/n') && r.id !== 'receipts/idem/first/n0')
      .map((r) => r.id.slice('receipts/idem/first/n'.length));
    const largest = receiptSizes.at(-1) ?? (quick ? '100k' : '5M');
    const evaluated = evaluate(targets(largest), rows);
    const profiles = profileMisses ? await profileMissed(evaluated, rows, tmpRoot) : {};
    const meta: RunMeta = {
      date: new Date().toISOString(),
      mode: quick ? 'quick' : 'full',
      node: process.version,
      cpus: `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}`,
      memoryGb: Math.round(totalmem() / 1024 ** 3),
      loadBefore,
      loadAfter: loadavg(),
      fsyncUsBefore,
      fsyncUsAfter: probeFsyncUs(tmpRoot),
      ...settings,
      wallSeconds: Math.round((performance.now() - started) / 1000),
      versions: await versions(),
      ...(values.only === undefined ? {} : { only: values.only }),
    };
    const results: Results = {
      meta,
      rows,
      targets: evaluated,
      profiles,
      explanations: explanations(rows, evaluated),
    };
    process.stdout.write(`${textTable(results)}\n`);
    if (values['no-write']) return;
    await writeReports(results);
    log(`total ${fmtNum((performance.now() - started) / 1000, 1)} s`);
  } finally {
    rmSync(tmpRoot, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
