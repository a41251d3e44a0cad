import { join } from 'node:path';
import { alternateOpenLoop } from '../lib/alternate.js';
import { closedLoop, collectGarbage, summarize, type Op } from '../lib/measure.js';
import { idemCall, newKey, noteBody, openIdemSqlite } from '../lib/notes.js';
import { logRow, wanted } from '../lib/rows.js';
import type { RowResult, SuiteContext } from '../lib/types.js';
import { formatCount, prefill } from './receipts.js';

const DAY = 24 * 3_600_000;
/** Writers in flight while the store's capacity is measured (group commit fills its batches). */
const CAPACITY_LANES = 8;
/** Most sweep time of the run, ms: a slow disk cannot push the suite past its time limit. */
const MAX_SWEEP_MS = 60_000;
/** The same with `--quick`, which must stay under the orchestrator's 90 s per suite. */
const QUICK_MAX_SWEEP_MS = 15_000;

/**
 * Issue 22: the sweep beside a sustained write load of half what the store can take. A table of
 * expired receipts (200k; `--quick`: 20k) is swept while writers create new receipts at half the
 * store's measured capacity (an open loop: arrivals do not wait for each other), in alternating
 * phases with and without the sweep. Rows: the writers without the sweep, the writers during it
 * (p99 against the former), and the sweep itself (receipts moved per second, against the rate at
 * which the writers created receipts meanwhile).
 */
export async function sweepLoadSuite(context: SuiteContext): Promise<RowResult[]> {
  const prefix = 'sweep-load/idem';
  const ids = {
    base: `${prefix}/writers/no-sweep`,
    during: `${prefix}/writers/during-sweep`,
    sweep: `${prefix}/sweep/during-writers`,
  };
  if (!Object.values(ids).some((id) => wanted(context, id))) return [];
  const expired = context.quick ? 20_000 : 200_000;
  const group = `Sweep under load: ${formatCount(expired)} expired receipts swept while writers run at half the store's capacity (SQLite FULL)`;
  const system = 'Idem: Executor + SqliteStore (the defaults)';
  const path = join(context.tmpDir, 'sweep-load.sqlite');
  const seconds = prefill(path, expired, true);
  const idem = openIdemSqlite(path, 'FULL');
  try {
    context.log(`prefilled ${expired.toLocaleString('en-US')} expired receipts in ${seconds.toFixed(1)} s`);
    const writer: Op = async (_lane, seq) => {
      await idemCall(idem, newKey(), noteBody(seq), 'executed');
    };
    const count = (sql: string) => (idem.db.prepare(sql).get() as { n: number }).n;
    // What the store can take: first executions, 8 in flight, no sweep.
    const capacity = await closedLoop(writer, {
      concurrency: CAPACITY_LANES,
      durationMs: Math.max(1000, context.durationMs * 2),
      warmupMs: context.warmupMs,
    });
    const rate = Math.max(1, Math.round(capacity.opsPerSec / 2));
    context.log(`capacity ${Math.round(capacity.opsPerSec)} first executions/s; writers at ${rate}/s`);
    collectGarbage();

    // The sweep alone for a moment, for the figure without writers.
    const aloneMs = context.quick ? 300 : 1000;
    const aloneStart = performance.now();
    const aloneController = new AbortController();
    const aloneTimer = setTimeout(() => aloneController.abort(), aloneMs);
    const sweepOnce = async (signal: AbortSignal) => {
      try {
        await idem.store.housekeeping.sweep({
          now: Date.now(),
          tombstoneTtlMs: 30 * DAY,
          batchSize: 500,
          signal,
        });
        return { done: true, result: undefined };
      } catch (error) {
        if (signal.aborted) return { done: false, result: undefined };
        throw error;
      }
    };
    const alone = await sweepOnce(aloneController.signal);
    clearTimeout(aloneTimer);
    const aloneSeconds = (performance.now() - aloneStart) / 1000;
    const sweptAlone = count('SELECT count(*) AS n FROM idem_tombstones');
    if (alone.done) throw new Error('the sweep finished alone: prefill more expired receipts');
    context.log(`the sweep alone: ${sweptAlone} receipts in ${aloneSeconds.toFixed(2)} s`);

    const receiptsBefore = count('SELECT count(*) AS n FROM idem_operations');
    const measured = await alternateOpenLoop(
      writer,
      rate,
      sweepOnce,
      context.quick ? 250 : 500,
      context.quick ? QUICK_MAX_SWEEP_MS : MAX_SWEEP_MS,
    );
    context.log(`the sweep beside the writers: ${Math.round(measured.jobSeconds)} s of sweep phases`);
    const swept = count('SELECT count(*) AS n FROM idem_tombstones') - sweptAlone;
    const expiredLeft = count(`SELECT count(*) AS n FROM idem_operations WHERE expires_at <= ${Date.now()}`);
    if (sweptAlone + swept + expiredLeft !== expired || (measured.done && expiredLeft !== 0)) {
      throw new Error(
        `the sweep left ${expiredLeft} of ${expired} expired receipts and wrote ${sweptAlone + swept} tombstones`,
      );
    }
    const created = count('SELECT count(*) AS n FROM idem_operations') + swept - receiptsBefore;
    const totalSeconds = measured.jobSeconds + measured.without.seconds;
    const insertsPerSecond = created / totalSeconds;
    const sweptPerSecond = swept / measured.jobSeconds;
    const extra = {
      expiredReceipts: expired,
      capacityOpsPerSec: Math.round(capacity.opsPerSec),
      writerRatePerSec: rate,
      insertsPerSecond: Math.round(insertsPerSecond),
      sweptPerSecond: Math.round(sweptPerSecond),
      sweptAlonePerSecond: Math.round(sweptAlone / aloneSeconds),
      sweepSeconds: Math.round(measured.jobSeconds * 10) / 10,
      sweptReceipts: sweptAlone + swept,
      unsettledCalls: measured.unsettled,
    };
    const partial = measured.done
      ? ''
      : `, stopped after ${Math.round(measured.jobSeconds)} s of sweeping: ${swept.toLocaleString('en-US')} moved`;
    const base: RowResult = {
      id: ids.base,
      group,
      system,
      scenario: `writers at ${rate}/s (half of ${Math.round(capacity.opsPerSec)}/s), no sweep (phases alternate with the sweep)`,
      concurrency: CAPACITY_LANES,
      measurement: measured.without,
      extra: { writerRatePerSec: rate, capacityOpsPerSec: extra.capacityOpsPerSec },
    };
    const during: RowResult = {
      id: ids.during,
      group,
      system,
      scenario: `writers at ${rate}/s during the sweep${partial}`,
      concurrency: CAPACITY_LANES,
      baseline: ids.base,
      ratioOf: 'p99',
      measurement: measured.during,
      extra,
    };
    // The sweep as a row of its own: receipts moved per second of sweep phases, against the rate
    // at which the writers created receipts (the writers' row during the sweep).
    const sweepRow: RowResult = {
      id: ids.sweep,
      group,
      system,
      scenario: `the sweep beside the writers: receipts moved per second (alone: ${extra.sweptAlonePerSecond.toLocaleString('en-US')}/s)`,
      concurrency: 1,
      baseline: ids.during,
      ratioOf: 'ops',
      measurement: {
        ...summarize(new Float64Array(0), measured.jobSeconds, 0, measured.during.peakRssMb),
        ops: swept,
        opsPerSec: sweptPerSecond,
      },
      extra,
    };
    for (const row of [base, during, sweepRow]) logRow(context, row);
    return [base, during, sweepRow];
  } finally {
    await idem.close();
  }
}
