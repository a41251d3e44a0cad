import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freshSeed, SeededRandom } from './lib/seeded-random.js';
import { REPO_ROOT } from './lib/process-group.js';
import { runScenario, type Scale, type ScenarioResult } from './lib/scenario.js';
import { renderReport, resultPassed } from './report.js';
import { ALL_SCENARIOS, scenarioNamed } from './scenarios/all-scenarios.js';

// npm run faults [-- --scenario NAME ...] [--seed N] [--short] [--rounds N] [--report FILE]
// Runs the scenarios against the built packages (npm run build first) and prints each seed; with
// --report writes the markdown table there (the long run writes docs/faults.md). Exit code 1 when a
// scenario has a count in a wrong column, its nemesis never fired, or it broke.

const USAGE = `Usage: npm run faults -- [--scenario NAME]... [--seed N] [--short] [--rounds N] [--report FILE]
  --scenario NAME  run only this scenario (repeatable); default all: ${ALL_SCENARIOS.map((s) => s.name).join(', ')}
  --seed N         the seed (of the first round); default a fresh one, printed
  --short          the short run's sizes (the one npm test runs) instead of the long run's
  --rounds N       run every scenario N times, each with the next seed (default 1)
  --report FILE    write the markdown report there (e.g. docs/faults.md)`;

function parse(argv: string[]) {
  const options = {
    scenarios: [] as string[],
    seed: undefined as number | undefined,
    scale: 'long' as Scale,
    rounds: 1,
    report: undefined as string | undefined,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const next = argv[++i];
      if (next === undefined) throw new Error(`${arg} needs a value\n${USAGE}`);
      return next;
    };
    if (arg === '--scenario') options.scenarios.push(value());
    else if (arg === '--seed') options.seed = Number(value()) >>> 0;
    else if (arg === '--short') options.scale = 'short';
    else if (arg === '--rounds') options.rounds = Math.max(1, Math.min(100, Number(value()) || 1));
    else if (arg === '--report') options.report = value();
    else if (arg === '-h' || arg === '--help') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else throw new Error(`unknown option ${arg}\n${USAGE}`);
  }
  return options;
}

const options = parse(process.argv.slice(2));
const scenarios = options.scenarios.length > 0 ? options.scenarios.map(scenarioNamed) : ALL_SCENARIOS;
const startedAt = new Date();
const firstSeed = options.seed ?? freshSeed();
const seeds = new SeededRandom(firstSeed);
const results: ScenarioResult[] = [];
for (let round = 0; round < options.rounds; round++) {
  for (const scenario of scenarios) {
    const seed = round === 0 ? firstSeed : seeds.int(1, 2 ** 31);
    results.push(
      await runScenario(scenario, seed, options.scale, (line) => process.stdout.write(`${line}\n`)),
    );
  }
}
const report = renderReport(
  results,
  `npm run faults -- ${process.argv.slice(2).join(' ')}`.trim(),
  startedAt,
);
process.stdout.write(`\n${report}`);
if (options.report !== undefined) writeReport(join(REPO_ROOT, options.report), report);
process.exitCode = results.every(resultPassed) ? 0 : 1;

/**
 * Writes the report into FILE: between its `<!-- faults-report:start -->` and `<!-- faults-report:end -->`
 * lines when it has them (docs/faults.md keeps its explanation around the last run's table), else as the whole file.
 */
function writeReport(file: string, report: string): void {
  const start = '<!-- faults-report:start -->';
  const end = '<!-- faults-report:end -->';
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const from = current.indexOf(start);
  const to = current.indexOf(end);
  if (from === -1 || to < from) return writeFileSync(file, report);
  const body = report.replace(/^# Fault suite report\n\n/, '');
  writeFileSync(file, `${current.slice(0, from + start.length)}\n\n${body}\n${current.slice(to)}`);
}
