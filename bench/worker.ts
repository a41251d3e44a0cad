/**
 * Runs one suite in its own process (so that each suite's memory and JIT state are its own) and
 * writes its rows as JSON to the file named on the command line. Started by bench/main.ts.
 */
import { writeFileSync } from 'node:fs';
import type { RowResult, Suite, SuiteContext } from './lib/types.js';
import { SUITES } from './suites/index.js';

interface WorkerArgs {
  readonly suite: string;
  readonly out: string;
  readonly context: Omit<SuiteContext, 'log' | 'only'> & { only?: string };
}

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? '{}') as WorkerArgs;
  const suite: Suite | undefined = SUITES[args.suite];
  if (suite === undefined) throw new Error(`unknown suite ${args.suite}`);
  const { only, ...rest } = args.context;
  const context: SuiteContext = {
    ...rest,
    only: only === undefined ? undefined : new RegExp(only),
    log: (message) => process.stderr.write(`  ${message}\n`),
  };
  const rows: RowResult[] = await suite(context);
  writeFileSync(args.out, JSON.stringify(rows));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench worker failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
