import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/client';
import {
  CLI,
  REPO_ROOT,
  callTool,
  cleanEnv,
  parseJsonLine,
  track,
  type LogLine,
  type Structured,
  type ToolResult,
} from './mcp-fixtures.js';

// Fixtures for the durable-operation e2e tests: the demo provider and `idem worker` as child
// processes, the provider's HTTP API, the `idem` CLI, and polling helpers.

export type ProviderMode = 'key' | 'reference' | 'none';

export const FINAL_STATES = ['succeeded', 'failed', 'outcome_unknown', 'cancelled'] as const;

export interface Deployment {
  deployment_id: string;
  service: string;
  version: string;
  client_reference?: string;
  status: string;
  created_at: string;
}

export interface WebhookDelivery {
  dedup_key: string;
  times_received: number;
  first_received_at: string;
}

/** A fault as `POST /_faults` takes it (see src/provider/provider-faults.ts). */
export interface ProviderFault {
  kind: 'drop_response' | 'delay' | 'status' | 'exit';
  route?: 'create' | 'webhook';
  times?: number;
  delayMs?: number;
  status?: number;
  retryAfterSeconds?: number;
}

export interface ChildHandle {
  readonly proc: ChildProcess;
  stderrLines(): string[];
  logs(): LogLine[];
  kill(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves when the process exits; rejects after `timeoutMs`. */
  waitForExit(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function exitOf(proc: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (proc.exitCode !== null || proc.signalCode !== null)
    return Promise.resolve({ code: proc.exitCode, signal: proc.signalCode });
  return new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
}

/**
 * Spawns `node dist/cli/main.js <args>` (tracked, so `cleanup()` kills it) and resolves once a stderr
 * JSON line satisfies `ready`; rejects if it exits first or the wait times out.
 */
export async function spawnCli(
  args: string[],
  ready: (line: LogLine) => boolean,
  options: { env?: Record<string, string>; readyTimeoutMs?: number } = {},
): Promise<ChildHandle & { readyLine: LogLine }> {
  const proc = track(
    spawn(process.execPath, [CLI, ...args], {
      cwd: REPO_ROOT,
      env: cleanEnv(options.env),
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  const lines: string[] = [];
  let partial = '';
  proc.stdout?.resume();
  const readyLine = await new Promise<LogLine>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${args[0]} not ready in time; stderr:\n${lines.join('\n')}`)),
      options.readyTimeoutMs ?? 15_000,
    );
    proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      partial += chunk;
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        const parsed = parseJsonLine(line);
        if (parsed !== undefined && ready(parsed)) {
          clearTimeout(timer);
          resolve(parsed);
        }
      }
    });
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${args[0]} exited (${code ?? signal}) before ready; stderr:\n${lines.join('\n')}`));
    });
  });
  const all = () => (partial === '' ? [...lines] : [...lines, partial]);
  return {
    proc,
    readyLine,
    stderrLines: all,
    logs: () =>
      all()
        .map(parseJsonLine)
        .filter((l): l is LogLine => l !== undefined),
    kill: (signal: NodeJS.Signals = 'SIGKILL') => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exitOf(proc);
    },
    waitForExit: (timeoutMs = 10_000) => withTimeout(exitOf(proc), timeoutMs, `${args[0]} did not exit`),
  };
}

export async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${message} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// The demo provider as a child process, and its HTTP API.

export interface ProviderProcess extends ChildHandle {
  readonly url: string;
  readonly mode: ProviderMode;
  deployments(): Promise<Deployment[]>;
  webhooks(): Promise<WebhookDelivery[]>;
  arm(fault: ProviderFault): Promise<void>;
}

/**
 * `idem provider --mode <mode> --port <port, default 0> --db <dbPath> --faults` (and `--key-retention`
 * when given); resolves once it logged its URL.
 */
export async function startProviderProcess(
  mode: ProviderMode,
  dbPath: string,
  options: { port?: number; keyRetention?: string } = {},
): Promise<ProviderProcess> {
  const child = await spawnCli(
    [
      'provider',
      ...['--mode', mode, '--port', String(options.port ?? 0), '--db', dbPath, '--faults'],
      ...(options.keyRetention === undefined ? [] : ['--key-retention', options.keyRetention]),
    ],
    (line) => line.event === 'provider.listening' && typeof line.url === 'string',
  );
  const url = child.readyLine.url as string;
  return {
    ...child,
    url,
    mode,
    deployments: async () => (await getJson<{ deployments: Deployment[] }>(`${url}/deployments`)).deployments,
    webhooks: async () => (await getJson<{ deliveries: WebhookDelivery[] }>(`${url}/webhooks`)).deliveries,
    arm: async (fault) => {
      const response = await fetch(`${url}/_faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(fault),
      });
      if (response.status !== 201)
        throw new Error(`arming ${JSON.stringify(fault)}: HTTP ${response.status} ${await response.text()}`);
    },
  };
}

async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

// ---------------------------------------------------------------------------------------------
// `idem worker` and one-shot CLI commands.

/** `idem worker --db <dbPath> <args>`; resolves once it logged `idem.worker_started`. */
export function startWorkerProcess(
  dbPath: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<ChildHandle> {
  return spawnCli(['worker', '--db', dbPath, ...args], (line) => line.event === 'idem.worker_started', {
    env,
  });
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node dist/cli/main.js <args>` to completion (asynchronously: servers keep running). */
export function runCli(args: string[], timeoutMs = 15_000): Promise<CliRun> {
  const proc = track(
    spawn(process.execPath, [CLI, ...args], {
      cwd: REPO_ROOT,
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let stdout = '';
  let stderr = '';
  proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return withTimeout(
    exitOf(proc).then(({ code }) => ({ code, stdout, stderr })),
    timeoutMs,
    `idem ${args.join(' ')} did not finish`,
  );
}

/** The operations recorded in a database, as `idem ops list --json` shows them. */
export async function listOperations(dbPath: string): Promise<Structured[]> {
  const run = await runCli(['ops', 'list', '--json', '--db', dbPath]);
  if (run.code !== 0) throw new Error(`idem ops list failed (${run.code}): ${run.stderr}`);
  return JSON.parse(run.stdout) as Structured[];
}

// ---------------------------------------------------------------------------------------------
// Polling.

/** Polls `check` every `intervalMs` until it returns a value other than undefined. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const cause = lastError === undefined ? '' : ` (last error: ${(lastError as Error).message})`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${cause}`);
    }
    await sleep(intervalMs);
  }
}

export function isFinal(status: string | undefined): boolean {
  return (FINAL_STATES as readonly string[]).includes(status ?? '');
}

/** `get_operation`, which must not be an error result. */
export async function getOperation(client: Client, operationId: string): Promise<Structured> {
  const result = await callTool(client, 'get_operation', { operation_id: operationId });
  if (result.isError) throw new Error(`get_operation ${operationId}: ${JSON.stringify(result.sc)}`);
  return result.sc;
}

/** Polls get_operation until the operation is in a final state (or `until` holds). */
export function waitForOperation(
  client: Client,
  operationId: string,
  options: { timeoutMs?: number; until?: (op: Structured) => boolean } = {},
): Promise<Structured> {
  const until = options.until ?? ((op: Structured) => isFinal(op.status));
  return waitFor(
    `operation ${operationId} to settle`,
    async () => {
      const op = await getOperation(client, operationId);
      return until(op) ? op : undefined;
    },
    options.timeoutMs ?? 10_000,
  );
}

/** start_deployment arguments in the default workspace. */
export function deploymentArgs(key: string, service = 'web', version = '1.0.0'): Record<string, unknown> {
  return { idempotency_key: key, workspace: 'default', service, version };
}

/** Calls a tool and settles to either its result or the error it threw (e.g. the server died). */
export async function callSettled(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  timeoutMs = 15_000,
): Promise<{ ok: true; result: ToolResult } | { ok: false; error: unknown }> {
  try {
    return { ok: true, result: await callTool(client, name, args, { timeout: timeoutMs }) };
  } catch (error) {
    return { ok: false, error };
  }
}
