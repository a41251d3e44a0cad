import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { durableScenario, nemesisPause } from '../lib/durable-scenario.js';
import type { ScenarioContext } from '../lib/scenario.js';

// The SQLite file on a small tmpfs (as test/faults/disk-full.test.ts does) that a filler file fills
// to ENOSPC while the workload runs, and that is freed again after a while.

const mountOf = (context: ScenarioContext) => join(context.dir, 'tmpfs');

function fill(path: string): void {
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(4096, 0x5a);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (error) {
    if ((error as { code?: string }).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd);
  }
}

/** A full disk under `idem serve`'s SQLite database, on and off; provider mode reference. */
export const diskFull = durableScenario({
  name: 'disk-full',
  description:
    "the database's file system full (ENOSPC on a tmpfs), on and off, under serve and its worker; mode reference",
  operations: { short: 8, long: 30 },
  spreadMs: { short: 2500, long: 10_000 },
  deadlineMs: 30_000,
  // A process down (or a disk full) for part of the deadline may rightly end an operation failed
  // without an attempt: here only honesty is promised (no duplicate, no false "nothing was done").
  promisesCompletion: false,
  async prepare(context) {
    const dir = mountOf(context);
    mkdirSync(dir);
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', dir], { stdio: 'pipe' });
      return undefined;
    } catch (error) {
      const reason = `mount -t tmpfs failed: ${String((error as { stderr?: unknown }).stderr ?? error).trim()}`;
      if (process.env.CI) throw new Error(reason);
      return reason;
    }
  },
  async cleanup(context) {
    // The processes hold the files open: the group stops them after the scenario; unmount lazily.
    try {
      execFileSync('umount', ['-l', mountOf(context)], { stdio: 'pipe' });
    } catch {
      // not mounted
    }
    rmSync(mountOf(context), { recursive: true, force: true });
  },
  rig: (context) => ({ mode: 'reference', sqlitePath: join(mountOf(context), 'idem.sqlite') }),
  async nemesis(_rig, context, stopped) {
    const faults = { disk_full: 0, full_ms: 0 };
    const filler = join(mountOf(context), 'filler');
    await nemesisPause(context, stopped, 300, 800);
    while (!stopped()) {
      fill(filler);
      faults.disk_full += 1;
      const from = Date.now();
      await nemesisPause(context, () => false, 300, 2000);
      unlinkSync(filler);
      faults.full_ms += Date.now() - from;
      await nemesisPause(context, stopped, 500, 2000);
    }
    return faults;
  },
});
