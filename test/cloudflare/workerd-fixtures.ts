import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { nodeLine } from '../../scripts/node-line.mjs';
import { REPO_ROOT, cleanEnv } from '../helpers/mcp-fixtures.js';

/** A worker running in workerd (miniflare), and how to stop it. */
export interface RunningWorker {
  readonly url: string;
  stop(): Promise<void>;
}

const SERVE = join(REPO_ROOT, 'test', 'cloudflare', 'serve-workerd.mjs');

/**
 * Node for miniflare, which needs 22 or later: this one when it is, else Node 24 from the registry
 * (scripts/node-line.mjs).
 */
export function workerdHostNode(): string {
  const major = Number(process.versions.node.split('.')[0]);
  return major >= 22 ? process.execPath : nodeLine(24).node;
}

/**
 * Starts the bundled worker at `script` in workerd with `config`'s compatibility settings, each
 * Durable Object binding on SQLite storage, on 127.0.0.1; resolves once it serves (bounded by
 * `timeoutMs`: a first start on a busy machine takes seconds).
 */
export function startWorker(
  script: string,
  config: string,
  bindings: Record<string, string>,
  timeoutMs = 90_000,
): Promise<RunningWorker> {
  const proc = spawn(workerdHostNode(), [SERVE, script, config, JSON.stringify(bindings)], {
    cwd: REPO_ROOT,
    env: cleanEnv(),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    let stdout = '';
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`workerd did not serve within ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      if (line === undefined) return;
      clearTimeout(timer);
      resolve({ url: (JSON.parse(line) as { url: string }).url, stop: () => stopWorker(proc) });
    });
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`workerd exited (${code ?? signal}) before serving:\n${stderr}`));
    });
  });
}

function stopWorker(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    proc.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    proc.stdin?.end();
  });
}
