import { performance } from 'node:perf_hooks';
import { CliError } from '../cli-error.js';
import { concurrentDuplicatesRow } from './concurrent-duplicates-row.js';
import { conflictingArgumentsRow } from './conflicting-arguments-row.js';
import { crossPrincipalRow } from './cross-principal-row.js';
import { CountCalibration, type EffectCount } from './effect-count.js';
import { freshKeyRow } from './fresh-key-row.js';
import { formatJsonPath } from './json-path.js';
import { keyArgumentRow } from './key-argument-row.js';
import { lostResponseRow } from './lost-response-row.js';
import { show, showFailure, type Observed } from './observed.js';
import { RowContext, type CheckRun } from './row-context.js';
import type { Row } from './row.js';
import type { ToolPlan } from './tool-plan.js';
import { inconclusive, skip, type RowOutcome, type RowResult, type Verdict } from './verdict.js';

/** One tool's part of the report. */
export interface ToolReport {
  readonly tool: string;
  /** fail when a row failed, else inconclusive when one was, else pass. */
  readonly verdict: Exclude<Verdict, 'skip'>;
  readonly key: { readonly name: string; readonly why: string } | null;
  /** The arguments that scope the key, never varied, and how they were recognised. */
  readonly scope: { readonly names: readonly string[]; readonly from: string };
  /** The arguments template, `{{unique}}` where each action differs (the key is added per action). */
  readonly arguments: Record<string, unknown>;
  readonly count: (Omit<EffectCount, 'path'> & { readonly path: string }) | null;
  readonly idPath: string | null;
  /** What the first call with the sample arguments came to. */
  readonly firstCall: Observed | null;
  readonly notes: readonly string[];
  readonly rows: readonly RowResult[];
}

const CONTRACT_ROWS: readonly Row[] = [
  lostResponseRow,
  concurrentDuplicatesRow,
  conflictingArgumentsRow,
  freshKeyRow,
  crossPrincipalRow,
];

/**
 * Checks one tool: its first call (with the sample arguments) tells whether the server takes them
 * and which read tool counts its effects; then the contract rows run in order. A tool the checker
 * cannot call (it needs the id of something that exists) or whose sample the server refuses gets
 * one row saying so instead of rows without evidence.
 */
export async function checkTool(plan: ToolPlan, run: CheckRun): Promise<ToolReport> {
  const rows: RowResult[] = [];
  const notes = [...plan.notes];
  const base = {
    tool: plan.name,
    key: plan.key ?? null,
    scope: plan.scope,
    arguments: plan.template,
    idPath: plan.idPath === undefined ? null : formatJsonPath(plan.idPath),
  };
  const done = (count: EffectCount | undefined, firstCall: Observed | null): ToolReport => ({
    ...base,
    verdict: rows.some((r) => r.result === 'fail')
      ? 'fail'
      : rows.some((r) => r.result === 'inconclusive')
        ? 'inconclusive'
        : 'pass',
    count: count === undefined ? null : { ...count, path: formatJsonPath(count.path) },
    firstCall,
    notes,
    rows,
  });
  const bare = new RowContext(run, plan, undefined);
  const sampleRow = (outcome: RowOutcome): RowResult => ({
    row: 'sample_arguments',
    title: 'first call, sample arguments',
    durationMs: 0,
    ...outcome,
    sent: bare.sent(),
  });

  if (plan.key === undefined) rows.push(await runRow(keyArgumentRow, bare, run));
  bare.beginRow();
  if (plan.blocked !== undefined) {
    rows.push(sampleRow(skip(`not run: ${plan.blocked}`)));
    return done(undefined, null);
  }
  const calibration = await CountCalibration.start(plan.counts, {
    connection: run.primary,
    timeoutMs: run.timeoutMs,
    signal: run.signal,
  });
  const action = bare.action();
  const first = await bare.callSettled(run.primary, action);
  if (first.kind !== 'succeeded') {
    const why =
      first.kind === 'error'
        ? `the server refused the sample arguments (${showFailure(first)}): fix them with --arg NAME=VALUE or --config`
        : first.definitive
          ? `the server refused the call (${showFailure(first)})`
          : `the first call got no reply (${showFailure(first)})`;
    rows.push(sampleRow(inconclusive(`${why}; nothing else was run`, { first })));
    return done(undefined, first);
  }
  const { count, note } = await calibration.finish();
  if (note !== undefined) notes.push(note);
  if (plan.idPath !== undefined && first.id === undefined) {
    throw new CliError(
      `--id-path ${formatJsonPath(plan.idPath)} finds nothing in a successful ${plan.name} result ` +
        `(the first call answered ${show(first)})`,
      2,
    );
  }
  const ctx = new RowContext(run, plan, count);
  for (const row of CONTRACT_ROWS) rows.push(await runRow(row, ctx, run));
  return done(count, first);
}

async function runRow(row: Row, ctx: RowContext, run: CheckRun): Promise<RowResult> {
  const started = performance.now();
  const title = row.title(ctx);
  ctx.beginRow();
  let outcome: RowOutcome;
  try {
    outcome = await row.check(ctx);
  } catch (error) {
    run.signal?.throwIfAborted();
    if (error instanceof CliError) throw error;
    const message = (error as Error)?.message ?? String(error);
    outcome = { result: 'fail', summary: `error: ${message}`, evidence: { error: message } };
  }
  return {
    row: row.id,
    title,
    ...outcome,
    sent: ctx.sent(),
    durationMs: Math.round(performance.now() - started),
  };
}
