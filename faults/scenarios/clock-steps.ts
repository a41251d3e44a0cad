import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { durableScenario, nemesisPause } from '../lib/durable-scenario.js';
import { CHILDREN } from '../lib/process-group.js';

/** Wall-clock offsets the nemesis steps to (ms): back by up to a minute, forward by up to 3 s (within every deadline). */
const OFFSETS = [-60_000, -10_000, -2000, 0, 1500, 3000] as const;

/**
 * Wall-clock steps in `idem serve` and `idem worker` (faults/children/clock-step.mjs, preloaded:
 * Date jumps, performance.now() does not), forward and back, while the workload runs; mode key.
 */
export const clockSteps = durableScenario({
  name: 'clock-steps',
  description: 'wall-clock steps (back up to 60 s, forward up to 3 s) in serve and worker; mode key',
  operations: { short: 8, long: 30 },
  spreadMs: { short: 2500, long: 10_000 },
  deadlineMs: 30_000,
  // A process down (or a disk full) for part of the deadline may rightly end an operation failed
  // without an attempt: here only honesty is promised (no duplicate, no false "nothing was done").
  promisesCompletion: false,
  rig: (context) => ({
    mode: 'key',
    separateWorker: true,
    serverEnv: { FAULTS_CLOCK_FILE: join(context.dir, 'clock-offset') },
    serverNodeArgs: ['--import', pathToFileURL(join(CHILDREN, 'clock-step.mjs')).href],
  }),
  async nemesis(rig, context, stopped) {
    const faults = { clock_steps: 0 };
    const file = join(context.dir, 'clock-offset');
    await nemesisPause(context, stopped, 100, 500);
    while (!stopped()) {
      writeFileSync(file, String(context.rng.pick(OFFSETS)));
      for (const child of [rig.server, rig.worker]) {
        if (!child?.running) continue;
        child.proc.kill('SIGUSR2');
        faults.clock_steps += 1;
      }
      await nemesisPause(context, stopped, 300, 1200);
    }
    return faults;
  },
});
