import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';

/** The repository root: the nearest folder up from here with the workspace's package.json. */
export const REPO_ROOT = findRoot(import.meta.dirname);
/** The built `idem` command; every process a scenario starts runs it (or node on a child script). */
export const CLI = join(REPO_ROOT, 'packages', 'idem-cli', 'dist', 'cli', 'main.js');
/** The suite's child scripts (plain JavaScript). */
export const CHILDREN = join(REPO_ROOT, 'faults', 'children');

function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && readFileSync(manifest, 'utf8').includes('"name": "idem-workspace"'))
      return dir;
    if (dirname(dir) === dir) throw new Error(`no idem-workspace package.json above ${from}`);
  }
}

export type LogLine = Record<string, unknown> & { event?: string };

export interface StartOptions {
  /** A name for errors and the report (server, worker, provider, proxy). */
  name: string;
  /** Arguments after `node <CLI>`. */
  args: string[];
  env?: Record<string, string>;
  /** Node options before the script (e.g. `--import` of the clock-step preload). */
  nodeArgs?: string[];
  /** The stderr JSON line that says the process is ready. */
  ready: (line: LogLine) => boolean;
  readyTimeoutMs?: number;
}

/** One process the suite started: its log lines, and kill -9. */
export class Child {
  readonly #lines: string[] = [];
  #partial = '';
  readonly exited: Promise<void>;

  constructor(
    readonly name: string,
    readonly proc: ChildProcess,
  ) {
    this.exited = new Promise((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) resolve();
      else proc.once('exit', () => resolve());
    });
    proc.stdout?.resume();
    proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.#partial += chunk;
      const parts = this.#partial.split('\n');
      this.#partial = parts.pop() ?? '';
      this.#lines.push(...parts);
    });
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  lines(): string[] {
    return this.#partial === '' ? [...this.#lines] : [...this.#lines, this.#partial];
  }

  logs(): LogLine[] {
    return this.lines()
      .map(parseJsonLine)
      .filter((line): line is LogLine => line !== undefined);
  }

  /** SIGKILL, then waits for the exit. */
  async kill9(): Promise<void> {
    if (this.running) this.proc.kill('SIGKILL');
    await this.exited;
  }
}

export function parseJsonLine(line: string): LogLine | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as LogLine)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Every process a scenario starts, so that `stopAll` stops each of them (also when the scenario
 * failed), with pid files of grandchildren (the proxy's upstreams) it must stop too.
 */
export class ProcessGroup {
  readonly #children: Child[] = [];
  readonly #pidFiles: string[] = [];

  constructor() {
    liveGroups.add(this);
  }

  async start(options: StartOptions): Promise<Child & { readyLine: LogLine }> {
    const proc = spawn(process.execPath, [...(options.nodeArgs ?? []), CLI, ...options.args], {
      cwd: REPO_ROOT,
      env: childEnv(options.env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const child = new Child(options.name, proc);
    this.#children.push(child);
    const readyLine = await new Promise<LogLine>((resolve, reject) => {
      const timeoutMs = options.readyTimeoutMs ?? 20_000;
      const poll = setInterval(() => {
        const line = child.logs().find(options.ready);
        if (line !== undefined) finish(() => resolve(line));
        else if (!child.running)
          finish(() =>
            reject(new Error(`${options.name} exited before ready:\n${child.lines().join('\n')}`)),
          );
      }, 20);
      const timer = setTimeout(
        () =>
          finish(() =>
            reject(new Error(`${options.name} not ready in ${timeoutMs} ms:\n${child.lines().join('\n')}`)),
          ),
        timeoutMs,
      );
      function finish(then: () => void) {
        clearInterval(poll);
        clearTimeout(timer);
        then();
      }
    });
    return Object.assign(child, { readyLine });
  }

  /** A file into which grandchildren write their pid, one a line; `stopAll` kills those too. */
  watchPidFile(path: string): void {
    this.#pidFiles.push(path);
  }

  children(): readonly Child[] {
    return this.#children;
  }

  async stopAll(): Promise<void> {
    liveGroups.delete(this);
    await Promise.all(this.#children.map((child) => child.kill9()));
    for (const file of this.#pidFiles) {
      if (!existsSync(file)) continue;
      for (const pid of readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  }

  /** Synchronous SIGKILL of everything still running: for an exit that never reached `stopAll`. */
  killNow(): void {
    for (const child of this.#children) if (child.running) child.proc.kill('SIGKILL');
  }
}

/** Groups not yet stopped: if this process exits (a crash, Ctrl-C) before, their processes are killed. */
const liveGroups = new Set<ProcessGroup>();
process.once('exit', () => {
  for (const group of liveGroups) group.killNow();
});
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    for (const group of liveGroups) group.killNow();
    process.exit(130);
  });

/** This environment without npm's per-run variables and Idem's own (a scenario sets what it needs). */
function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || /^npm_/i.test(name) || name.startsWith('IDEM_')) continue;
    env[name] = value;
  }
  return { ...env, ...extra };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
