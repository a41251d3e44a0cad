import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { median } from './measure.js';
import type { RowResult } from './types.js';

/**
 * Builds the benchmark of another commit (`rev`: a commit, tag or branch) for `npm run bench --
 * --baseline REV`, and returns the path of its suite worker. The commit's files are exported with
 * `git archive` into `.tmp/bench-baseline/<sha>` (reused when already built; no worktree is
 * registered), its `node_modules` is a link to this checkout's, and its own `tsconfig.bench.json`
 * compiles its own bench/ and library sources with this checkout's TypeScript. A commit whose
 * benchmark needs dependencies this checkout does not have fails to build here, naming the commit.
 */
export function buildBaseline(root: string, rev: string): { sha: string; worker: string } {
  const sha = execFileSync('git', ['rev-parse', '--verify', `${rev}^{commit}`], {
    cwd: root,
    encoding: 'utf8',
  }).trim();
  const dir = join(root, '.tmp', 'bench-baseline', sha);
  const worker = join(dir, 'dist-bench', 'bench', 'worker.js');
  if (existsSync(worker)) return { sha, worker };
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  try {
    execFileSync('sh', ['-c', `git archive --format=tar ${sha} | tar -x -C "${dir}"`], { cwd: root });
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
    execFileSync(
      process.execPath,
      [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.bench.json'],
      {
        cwd: dir,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
  } catch (error) {
    const output = String((error as { stdout?: unknown }).stdout ?? '');
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`cannot build the benchmark of ${rev} (${sha.slice(0, 12)}):\n${output}`, {
      cause: error,
    });
  }
  if (!existsSync(worker)) throw new Error(`the benchmark of ${rev} has no dist-bench/bench/worker.js`);
  return { sha, worker };
}

/** One row's throughput in each build, over the alternating runs of one comparison. */
export interface ComparedRow {
  readonly id: string;
  readonly baseline: readonly number[];
  readonly current: readonly number[];
}

/** Collects ops/s per row id from a run's rows into `into` (skipped rows are left out). */
export function collect(
  into: Map<string, { baseline: number[]; current: number[] }>,
  side: 'baseline' | 'current',
  rows: readonly RowResult[],
): void {
  for (const row of rows) {
    if (row.measurement === undefined) continue;
    let entry = into.get(row.id);
    if (entry === undefined) {
      entry = { baseline: [], current: [] };
      into.set(row.id, entry);
    }
    entry[side].push(row.measurement.opsPerSec);
  }
}

/**
 * The comparison table: per row measured in both builds, the median ops/s of each and their ratio
 * (current ÷ baseline), with rows of Idem's first executions and replays below `1 - maxDrop` marked.
 * Returns the text and the ids of the marked rows.
 */
export function comparisonTable(
  rows: ReadonlyMap<string, { baseline: number[]; current: number[] }>,
  maxDrop: number,
): { text: string; below: string[] } {
  const lines = [
    `${'row'.padEnd(44)} ${'baseline ops/s'.padStart(15)} ${'current ops/s'.padStart(15)} ${'ratio'.padStart(7)}`,
  ];
  const below: string[] = [];
  for (const [id, { baseline, current }] of rows) {
    if (baseline.length === 0 || current.length === 0) continue;
    const base = median(baseline);
    const now = median(current);
    const ratio = now / base;
    const watched = /\/idem\/(first|replay)\//.test(id);
    const mark = watched && ratio < 1 - maxDrop ? '  below' : '';
    if (mark !== '') below.push(id);
    lines.push(
      `${id.padEnd(44)} ${Math.round(base).toLocaleString('en-US').padStart(15)} ${Math.round(now).toLocaleString('en-US').padStart(15)} ${ratio.toFixed(2).padStart(7)}${mark}`,
    );
  }
  return { text: lines.join('\n'), below };
}
