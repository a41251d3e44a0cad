import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished, vi } from 'vitest';
import { openSqlite, SqliteStore } from '../../packages/idem/src/adapters/sqlite/index.js';
import { systemClock, type Clock } from '../../packages/idem/src/core/clock.js';
import { fingerprint } from '../../packages/idem/src/core/fingerprint.js';
import { newAttemptId, newOperationId } from '../../packages/idem/src/core/ids.js';
import type { JsonObject } from '../../packages/idem/src/core/json.js';
import type { LogFields, Logger } from '../../packages/idem/src/core/logger.js';
import type { OperationIdentity } from '../../packages/idem/src/core/operation-identity.js';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import type { RetryPolicy } from '../../packages/idem/src/core/retry-policy.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import {
  Worker,
  type DurableHandler,
  type RecoveryMode,
  type WorkerOptions,
} from '../../packages/idem/src/operations/index.js';
import { deploymentHandler } from '../../packages/idem-cli/src/server/deployment-handler.js';
import { startProvider, type RunningProvider } from '../../packages/idem-cli/src/provider/index.js';
import { openPostgresTestStore } from '../helpers/postgres-fixtures.js';
import { commitOnce } from '../../packages/idem/src/executor/commit-once.js';

/** The engines the worker's behaviour tests loop over. */
export type Engine = 'sqlite' | 'postgres';

/** Small real timeouts (the provider call is real HTTP); retries are due at once (random 0). */
export const TEST_POLICY: RetryPolicy = {
  totalMs: 30_000,
  attemptTimeoutMs: 300,
  maxAttempts: 3,
  baseDelayMs: 200,
  maxDelayMs: 5_000,
};

export const LEASE_MS = 5_000;
export const OPERATION = 'deploy';

/** A temp dir removed when the current test finishes (after the stores and the provider closed). */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'idem-operations-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A SqliteStore on `path` (a second call with the same path: a second connection), closed after the test. */
export function openStore(path: string, clock: Clock): SqliteStore {
  const store = new SqliteStore(openSqlite(path), { clock });
  onTestFinished(() => store.close());
  return store;
}

export async function openProvider(mode: RecoveryMode, dir: string): Promise<RunningProvider> {
  const provider = await startProvider({ mode, port: 0, dbPath: join(dir, 'provider.sqlite') });
  onTestFinished(() => provider.close());
  return provider;
}

export interface AcceptOptions {
  readonly deadlineMs?: number;
  readonly operation?: string;
}

/** Commits a durable operation born `accepted`, as `Executor.start` would. */
export async function accept(
  store: IdemStore<unknown>,
  clock: Clock,
  args: JsonObject,
  options: AcceptOptions = {},
): Promise<OperationRecord> {
  const operationId = newOperationId(clock.now());
  const identity: OperationIdentity = {
    principal: 'alice',
    workspace: 'team-a',
    operation: options.operation ?? OPERATION,
    version: 1,
    key: randomUUID(),
  };
  const now = clock.now();
  const record: OperationRecord = {
    operationId,
    identity,
    fingerprint: fingerprint(args),
    kind: 'durable',
    status: 'accepted',
    args,
    createdAt: now,
    updatedAt: now,
    deadlineAt: now + (options.deadlineMs ?? 30_000),
    attemptCount: 0,
    dispatched: false,
  };
  const outcome = await commitOnce(store.receipts, {
    identity,
    context: { operationId, attemptId: newAttemptId(clock.now()), identity },
    decide: () => ({ kind: 'execute' }),
    receipt: () => record,
  });
  if (outcome.kind !== 'executed') throw new Error('accept: not executed');
  return record;
}

export interface LogLine {
  level: 'info' | 'warn' | 'error';
  event: string;
  fields: LogFields;
}

export function memoryLogger(): Logger & { lines: LogLine[]; events(event: string): LogFields[] } {
  const lines: LogLine[] = [];
  const push =
    (level: LogLine['level']) =>
    (event: string, fields: LogFields = {}) =>
      void lines.push({ level, event, fields });
  return {
    lines,
    events: (event) => lines.filter((line) => line.event === event).map((line) => line.fields),
    info: push('info'),
    warn: push('warn'),
    error: push('error'),
  };
}

export interface Harness {
  readonly dir: string;
  readonly dbPath: string;
  readonly clock: Clock;
  readonly store: IdemStore<unknown>;
  readonly provider: RunningProvider;
  readonly handler: DurableHandler;
  readonly logger: ReturnType<typeof memoryLogger>;
  worker(options?: Partial<WorkerOptions>): Worker;
  accept(args?: JsonObject, options?: AcceptOptions): Promise<OperationRecord>;
  get(operationId: string): Promise<OperationRecord>;
  deployments(): Promise<Array<Record<string, unknown>>>;
}

/** A store on `engine` (SQLite temp file, or a PostgreSQL schema of its own), closed after the test. */
export async function openEngineStore(
  engine: Engine,
  dbPath: string,
  clock: Clock,
): Promise<IdemStore<unknown>> {
  if (engine === 'sqlite') return openStore(dbPath, clock);
  const pg = await openPostgresTestStore({ clock });
  onTestFinished(() => pg.close());
  return pg.store as IdemStore<unknown>;
}

/** A store (SQLite unless `engine` says otherwise), a provider in `mode` (temp files), and its handler. */
export async function harness(
  mode: RecoveryMode,
  clock: Clock = systemClock,
  engine: Engine = 'sqlite',
): Promise<Harness> {
  const dir = tempDir();
  const dbPath = join(dir, 'idem.sqlite');
  const store = await openEngineStore(engine, dbPath, clock);
  const provider = await openProvider(mode, dir);
  const handler = deploymentHandler({ baseUrl: provider.url, mode });
  const logger = memoryLogger();
  return {
    dir,
    dbPath,
    clock,
    store,
    provider,
    handler,
    logger,
    worker: (options = {}) =>
      new Worker({
        store,
        handlers: { [OPERATION]: handler },
        clock,
        logger,
        policy: TEST_POLICY,
        leaseMs: LEASE_MS,
        random: () => 0,
        ...options,
      }),
    accept: (args = { service: 'billing', version: '1.4.2' }, options) => accept(store, clock, args, options),
    get: async (operationId) => {
      const record = await store.ledger.get(operationId);
      if (record === undefined) throw new Error(`no operation ${operationId}`);
      return record;
    },
    deployments: () => listDeployments(provider.url),
  };
}

export async function listDeployments(baseUrl: string): Promise<Array<Record<string, unknown>>> {
  const response = await fetch(`${baseUrl}/deployments`);
  return ((await response.json()) as { deployments: Array<Record<string, unknown>> }).deployments;
}

export interface SentRequest {
  method: string;
  url: string;
  idempotencyKey: string | undefined;
  body: string | undefined;
}

/** Records every request made through global fetch (and still makes it). */
export function recordRequests(): SentRequest[] {
  const sent: SentRequest[] = [];
  const original = globalThis.fetch;
  const spy = vi.spyOn(globalThis, 'fetch').mockImplementation((input, init) => {
    const headers = new Headers(init?.headers);
    sent.push({
      method: init?.method ?? 'GET',
      url: String(input),
      idempotencyKey: headers.get('idempotency-key') ?? undefined,
      body: typeof init?.body === 'string' ? init.body : undefined,
    });
    return original(input, init);
  });
  onTestFinished(() => spy.mockRestore());
  return sent;
}

/** The requests that could create a deployment. */
export function creates(sent: SentRequest[]): SentRequest[] {
  return sent.filter((request) => request.method === 'POST' && request.url.endsWith('/deployments'));
}

/** Polls `check` (real time) until it returns true; fails after `timeoutMs`. */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A loopback URL on which nothing listens (a port that was just free). */
export async function refusedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
