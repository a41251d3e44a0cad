import { spawn } from 'node:child_process';
import type { Clock } from '../core/clock.js';
import { childEnvironment, type CommandSpec } from './command-spec.js';

/** Why Idem stopped a process (it was signalled before it exited by itself). */
export type StopCause = 'cancel' | 'timeout' | 'lease_lost';

/** How one command process ended: pid (or why it did not start), exit code or signal, why it was stopped. */
export interface ProcessRun {
  /** Undefined when the process could not be started (then `spawnError` says why). */
  readonly pid?: number;
  readonly spawnError?: string;
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Set when Idem signalled the process group before the process exited by itself. */
  readonly stoppedBy?: StopCause;
  /** The first signal Idem sent, and whether it had to follow with SIGKILL. */
  readonly escalated: boolean;
  readonly durationMs: number;
}

/** What `runProcess` runs, where its output goes, and what stops it (cancel, lease loss, timeout). */
export interface RunProcessOptions {
  readonly spec: CommandSpec;
  readonly clock: Clock;
  /** After SIGTERM, how long before SIGKILL (and, after an exit, how long pipes may stay open). */
  readonly killGraceMs: number;
  /** Every chunk of stdout and stderr, in arrival order. */
  onOutput(chunk: Buffer): void;
  /** Called once the process exists, with its pid (also its process group id). */
  onSpawn?(pid: number): void;
  readonly cancelSignal?: AbortSignal;
  readonly leaseSignal?: AbortSignal;
  /** The server's environment, for the few variables the child inherits (default process.env). */
  readonly serverEnv?: Readonly<Record<string, string | undefined>>;
}

/**
 * Runs a command once, to its end: through pipes (no PTY), with only `childEnvironment`, as the
 * leader of its own process group (`detached`). On a cancel request, the command's timeout or a
 * lost lease the whole group gets SIGTERM, then SIGKILL after `killGraceMs`. After the process
 * exits, a group member still holding the pipes open is killed after the grace as well, so the
 * run always ends. Never rejects: a process that cannot be started is a `spawnError`.
 */
export function runProcess(options: RunProcessOptions): Promise<ProcessRun> {
  const { spec, clock, killGraceMs } = options;
  const t0 = clock.monotonic();
  return new Promise<ProcessRun>((resolve) => {
    const timers = new AbortController();
    let stoppedBy: StopCause | undefined;
    let escalated = false;
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let settled = false;

    const child = spawn(spec.argv[0] as string, spec.argv.slice(1), {
      cwd: spec.cwd,
      env: childEnvironment(spec, options.serverEnv),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      windowsHide: true,
    });
    const pid = child.pid;

    const killGroup = (signal: NodeJS.Signals): boolean => {
      if (pid === undefined) return false;
      try {
        process.kill(-pid, signal);
        return true;
      } catch {
        return false; // the group is gone
      }
    };
    const sleep = (ms: number) =>
      clock.sleep(ms, { signal: timers.signal }).then(
        () => true,
        () => false,
      );
    const stop = (cause: StopCause) => {
      if (exited !== undefined || stoppedBy !== undefined) return;
      // Only a signal that reached the group counts: if it is gone, the process exited by itself.
      if (!killGroup('SIGTERM')) return;
      stoppedBy = cause;
      void sleep(killGraceMs).then((due) => {
        if (due && exited === undefined) escalated = killGroup('SIGKILL') || escalated;
      });
    };
    const finish = (run: Omit<ProcessRun, 'durationMs' | 'escalated' | 'stoppedBy'>) => {
      if (settled) return;
      settled = true;
      timers.abort();
      options.cancelSignal?.removeEventListener('abort', onCancel);
      options.leaseSignal?.removeEventListener('abort', onLease);
      resolve({
        ...run,
        ...(stoppedBy === undefined ? {} : { stoppedBy }),
        escalated,
        durationMs: Math.round(clock.monotonic() - t0),
      });
    };
    const onCancel = () => stop('cancel');
    const onLease = () => stop('lease_lost');

    child.once('error', (error: NodeJS.ErrnoException) => {
      // No process was started (ENOENT, EACCES, a missing cwd): nothing ran.
      if (pid === undefined)
        finish({ spawnError: error.code ?? error.message, exitCode: null, signal: null });
    });
    if (pid === undefined) return;
    options.onSpawn?.(pid);
    child.stdout?.on('data', (chunk: Buffer) => options.onOutput(chunk));
    child.stderr?.on('data', (chunk: Buffer) => options.onOutput(chunk));
    if (options.cancelSignal?.aborted) stop('cancel');
    if (options.leaseSignal?.aborted) stop('lease_lost');
    options.cancelSignal?.addEventListener('abort', onCancel, { once: true });
    options.leaseSignal?.addEventListener('abort', onLease, { once: true });
    void sleep(spec.timeoutMs).then((due) => {
      if (due) stop('timeout');
    });
    child.once('exit', (code, signal) => {
      exited = { code, signal };
      // Output may still be in the pipes; a grandchild may hold them open: bounded wait.
      void sleep(killGraceMs).then((due) => {
        if (!due) return;
        killGroup('SIGKILL');
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish({ pid, exitCode: code, signal });
      });
    });
    child.once('close', () => {
      const end = exited ?? { code: child.exitCode, signal: child.signalCode };
      finish({ pid, exitCode: end.code, signal: end.signal });
    });
  });
}
