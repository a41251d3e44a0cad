import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptyCounts, type WrongCounts } from './checker.js';
import { ProcessGroup } from './process-group.js';
import { SeededRandom } from './seeded-random.js';

/** Short: the run inside `npm test` (seconds per scenario); long: the documented run for the report. */
export type Scale = 'short' | 'long';

export interface ScenarioContext {
  readonly seed: number;
  readonly rng: SeededRandom;
  readonly scale: Scale;
  /** A temporary directory of this run, removed afterwards. */
  readonly dir: string;
  /** Every process the scenario starts goes through it; all are stopped afterwards. */
  readonly group: ProcessGroup;
  /** A tag unique to this run (keys, service names, schemas). */
  readonly tag: string;
}

export interface ScenarioOutcome {
  /** Operations (or calls) the workload made. */
  operations: number;
  /** Faults the nemesis injected, by kind. */
  faults: Record<string, number>;
  counts: WrongCounts;
  /** Final states (or answers) seen, by kind: what happened besides the wrong columns. */
  finals: Record<string, number>;
  /** One line per wrong count. */
  findings: string[];
  /** Why the scenario did not run on this machine (no tmpfs, no PostgreSQL). */
  skipped?: string;
}

export interface Scenario {
  readonly name: string;
  /** One line for the report. */
  readonly description: string;
  /** Issue 38's item this scenario reproduces, when it does. */
  readonly issueItem?: string;
  run(context: ScenarioContext): Promise<ScenarioOutcome>;
}

export interface ScenarioResult extends ScenarioOutcome {
  name: string;
  seed: number;
  scale: Scale;
  durationMs: number;
  /** The scenario itself broke (setup failed, a process did not start): its counts mean nothing. */
  error?: string;
}

/** Sum of the faults injected. */
export function faultTotal(faults: Record<string, number>): number {
  return Object.values(faults).reduce((sum, n) => sum + n, 0);
}

/**
 * Runs one scenario with its seed, in its own directory and process group; every process is stopped
 * and the directory removed afterwards, also when it throws.
 */
export async function runScenario(
  scenario: Scenario,
  seed: number,
  scale: Scale,
  print: (line: string) => void = () => {},
): Promise<ScenarioResult> {
  print(
    `[faults] scenario ${scenario.name} seed ${seed} (${scale}); replay: npm run faults -- --scenario ${scenario.name} --seed ${seed}${scale === 'short' ? ' --short' : ''}`,
  );
  const dir = mkdtempSync(join(tmpdir(), `idem-faults-${scenario.name}-`));
  const group = new ProcessGroup();
  const started = Date.now();
  const context: ScenarioContext = {
    seed,
    rng: new SeededRandom(seed),
    scale,
    dir,
    group,
    tag: `${seed.toString(36)}${started.toString(36).slice(-4)}`,
  };
  let result: ScenarioResult;
  try {
    const outcome = await scenario.run(context);
    result = { ...outcome, name: scenario.name, seed, scale, durationMs: Date.now() - started };
  } catch (error) {
    result = {
      name: scenario.name,
      seed,
      scale,
      durationMs: Date.now() - started,
      operations: 0,
      faults: {},
      counts: emptyCounts(),
      finals: {},
      findings: [],
      error: (error as Error).stack ?? String(error),
    };
  } finally {
    await group.stopAll();
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  }
  print(
    `[faults] ${scenario.name} seed ${seed}: ${result.operations} operations, faults ${JSON.stringify(result.faults)}, ` +
      `wrong ${JSON.stringify(result.counts)}, finals ${JSON.stringify(result.finals)}` +
      (result.skipped ? `, SKIPPED: ${result.skipped}` : '') +
      (result.error ? `, ERROR: ${result.error.split('\n').slice(0, 12).join('\n')}` : ''),
  );
  for (const finding of result.findings.slice(0, 10)) print(`[faults]   ${finding}`);
  return result;
}
