import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import {
  CLI,
  REPO_ROOT,
  cleanEnv,
  parseJsonLine,
  startServerProcess,
  track,
  type LogLine,
  type ServerProcess,
  type Structured,
} from './mcp-fixtures.js';
import { POSTGRES_URL } from './postgres-fixtures.js';

// Fixtures for the multi-instance tests: several `idem serve --db postgres://…` processes on one
// schema, raw JSON-RPC calls to them, a seeded random source, bounded concurrency, a backend killer
// and the notes-per-key census taken straight from the schema.

/** A fresh schema name: `idem_m_<16 hex>`. */
export function freshSchema(): string {
  return `idem_m_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

/** The application_name every server of `schema` connects with; the killer filters on it. */
export function serverAppName(schema: string): string {
  return `idem-server-${schema}`;
}

/** POSTGRES_URL with `application_name` set, so that this schema's server connections can be found. */
export function serverDbUrl(schema: string): string {
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('application_name', serverAppName(schema));
  return url.href;
}

/** A small pool for the test's own queries (application_name `idem-test-<label>`). */
export function adminPool(label: string): pg.Pool {
  return new pg.Pool({
    connectionString: POSTGRES_URL,
    max: 2,
    application_name: `idem-test-${label}`,
    connectionTimeoutMillis: 5000,
  });
}

export async function dropSchema(pool: pg.Pool, schema: string): Promise<void> {
  if (!/^idem_m_[0-9a-f]{16}$/.test(schema)) throw new Error(`refusing to drop schema ${schema}`);
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
}

/**
 * `n` servers on one schema: the first alone (it creates the tables), then the others at once.
 * (Starting all at once on an empty schema races on the notes table's DDL: see the report.)
 */
export async function startPgServers(
  n: number,
  schema: string,
  extraArgs: readonly string[] = ['--no-worker'],
): Promise<ServerProcess[]> {
  const first = await startPgServer(schema, extraArgs);
  const rest = await Promise.all(Array.from({ length: n - 1 }, () => startPgServer(schema, extraArgs)));
  return [first, ...rest];
}

export function startPgServer(schema: string, extraArgs: readonly string[]): Promise<ServerProcess> {
  return startServerProcess({
    args: ['--db', serverDbUrl(schema), '--db-schema', schema, ...extraArgs],
    readyTimeoutMs: 20_000,
  });
}

export function alive(server: ServerProcess): boolean {
  return server.proc.exitCode === null && server.proc.signalCode === null;
}

// ---------------------------------------------------------------------------------------------
// Raw JSON-RPC over Streamable HTTP. The servers are stateless with JSON responses, so a lone
// `tools/call` POST (no initialize) is a complete exchange; the wire shows transport failures as
// they are, which an SDK client would partly hide.

export type CallResult =
  | { kind: 'result'; isError: boolean; sc: Structured }
  /** The request failed below MCP: refused, reset, timed out (fetch threw). */
  | { kind: 'transport'; message: string }
  /** An HTTP status other than 200, a JSON-RPC error, or a body that is not a tool result. */
  | { kind: 'protocol'; message: string };

let rpcId = 0;

export async function rpcCall(
  url: string,
  name: string,
  args: Record<string, unknown>,
  timeoutMs = 15_000,
): Promise<CallResult> {
  rpcId += 1;
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: rpcId,
        method: 'tools/call',
        params: { name, arguments: args },
      }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await response.text();
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return {
      kind: 'transport',
      message: `${(error as Error).message} ${cause?.code ?? cause?.message ?? ''}`,
    };
  }
  if (response.status !== 200) return { kind: 'protocol', message: `HTTP ${response.status}: ${text}` };
  let body: { result?: { isError?: boolean; structuredContent?: Structured }; error?: unknown };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return { kind: 'protocol', message: `not JSON: ${text.slice(0, 200)}` };
  }
  if (body.error !== undefined || body.result?.structuredContent === undefined) {
    return { kind: 'protocol', message: text.slice(0, 500) };
  }
  return { kind: 'result', isError: body.result.isError === true, sc: body.result.structuredContent };
}

export function isSuccess(result: CallResult): result is { kind: 'result'; isError: false; sc: Structured } {
  return result.kind === 'result' && !result.isError && result.sc.status === 'succeeded';
}

/** A short label for a non-success: `busy`, `outcome_unknown`, `transport`, … */
export function failureLabel(result: CallResult): string {
  if (result.kind !== 'result') return result.kind;
  return result.sc.error?.code ?? `status:${String(result.sc.status)}`;
}

// ---------------------------------------------------------------------------------------------
// Load shaping.

/** mulberry32: a small seeded PRNG in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export function randomInt(random: () => number, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

/** Runs `fn` over `items` with at most `limit` in flight; results in input order. */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await fn(items[index] as T, index);
    }
  });
  await Promise.all(lanes);
  return results;
}

// ---------------------------------------------------------------------------------------------
// The backend killer: terminates every connection of one application_name, repeatedly.

export interface Killer {
  /** Stops the loop; resolves with the number of backends it terminated and the rounds it ran. */
  stop(): Promise<{ terminated: number; rounds: number }>;
}

export async function startKiller(
  applicationName: string,
  options: { intervalMs: number; durationMs: number },
): Promise<Killer> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, application_name: 'idem-test-killer' });
  await client.connect();
  let terminated = 0;
  let rounds = 0;
  let stopped = false;
  const started = Date.now();
  const loop = (async () => {
    while (!stopped && Date.now() - started < options.durationMs) {
      const { rows } = await client.query<{ t: boolean }>(
        `SELECT pg_terminate_backend(pid) AS t FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = $1`,
        [applicationName],
      );
      terminated += rows.filter((row) => row.t).length;
      rounds += 1;
      await sleep(options.intervalMs);
    }
  })();
  return {
    async stop() {
      stopped = true;
      try {
        await loop;
      } finally {
        await client.end().catch(() => undefined);
      }
      return { terminated, rounds };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The census, straight from the schema.

export interface NotesCensus {
  /** create_note operations whose key starts with the prefix. */
  keys: number;
  /** Fewest and most notes of one such operation (by notes.operation_id). */
  min: number;
  max: number;
  /** Notes whose body starts with the prefix, whatever their operation_id. */
  totalNotes: number;
  /** Notes of the prefix whose operation_id names no operation. */
  orphans: number;
  /** Operations whose resource_id is not the note_id of their own note. */
  mismatched: number;
  /** key -> the operation_id and resource_id recorded for it. */
  byKey: Map<string, { operationId: string; resourceId: string | null; notes: number }>;
}

/**
 * Notes per key for the keys (and note bodies) starting with `prefix`: the operations table joined
 * to the notes table on operation_id. Keys and bodies must share the prefix.
 */
export async function notesCensus(pool: pg.Pool, schema: string, prefix: string): Promise<NotesCensus> {
  const like = `${prefix.replace(/[\\%_]/g, '\\$&')}%`;
  const perKey = await pool.query<{
    idem_key: string;
    operation_id: string;
    resource_id: string | null;
    n: string;
    matching: string;
  }>(
    `SELECT o.idem_key, o.operation_id, o.resource_id, count(n.note_id) AS n,
            count(n.note_id) FILTER (WHERE n.note_id = o.resource_id) AS matching
     FROM ${schema}.idem_operations o LEFT JOIN ${schema}.notes n ON n.operation_id = o.operation_id
     WHERE o.operation = 'create_note' AND o.idem_key LIKE $1
     GROUP BY 1, 2, 3`,
    [like],
  );
  const totals = await pool.query<{ total: string; orphans: string }>(
    `SELECT count(*) AS total,
            count(*) FILTER (WHERE NOT EXISTS
              (SELECT 1 FROM ${schema}.idem_operations o WHERE o.operation_id = n.operation_id)) AS orphans
     FROM ${schema}.notes n WHERE n.body LIKE $1`,
    [like],
  );
  const counts = perKey.rows.map((row) => Number(row.n));
  const byKey = new Map<string, { operationId: string; resourceId: string | null; notes: number }>();
  for (const row of perKey.rows) {
    byKey.set(row.idem_key, {
      operationId: row.operation_id,
      resourceId: row.resource_id,
      notes: Number(row.n),
    });
  }
  return {
    keys: perKey.rows.length,
    min: counts.length === 0 ? 0 : Math.min(...counts),
    max: counts.length === 0 ? 0 : Math.max(...counts),
    totalNotes: Number(totals.rows[0]?.total ?? 0),
    orphans: Number(totals.rows[0]?.orphans ?? 0),
    mismatched: perKey.rows.filter((row) => Number(row.n) !== 1 || Number(row.matching) !== 1).length,
    byKey,
  };
}

export function censusLine(census: NotesCensus, extra: Record<string, number | string>): string {
  const fields = Object.entries(extra).map(([name, value]) => `${name}=${value}`);
  return [
    'notes-per-key:',
    `keys=${census.keys}`,
    `min=${census.min}`,
    `max=${census.max}`,
    `total_notes=${census.totalNotes}`,
    ...fields,
  ].join(' ');
}

// ---------------------------------------------------------------------------------------------
// The demo provider as a child process.

export interface ProviderProcess {
  readonly url: string;
  stderrLines(): string[];
  kill(): void;
}

export async function startProviderProcess(dbPath: string): Promise<ProviderProcess> {
  const proc = track(
    spawn(process.execPath, [CLI, 'provider', '--mode', 'key', '--port', '0', '--db', dbPath, '--faults'], {
      cwd: REPO_ROOT,
      env: cleanEnv(),
      stdio: ['ignore', 'ignore', 'pipe'],
    }),
  );
  const lines: string[] = [];
  let partial = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`provider not ready in time; stderr:\n${lines.join('\n')}`)),
      15_000,
    );
    proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      partial += chunk;
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        const parsed: LogLine | undefined = parseJsonLine(line);
        if (parsed?.event === 'provider.listening' && typeof parsed.url === 'string') {
          clearTimeout(timer);
          resolve(parsed.url);
        }
      }
    });
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`provider exited (${code ?? signal}) before listening; stderr:\n${lines.join('\n')}`));
    });
  });
  return {
    url,
    stderrLines: () => (partial === '' ? [...lines] : [...lines, partial]),
    kill: () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    },
  };
}

export async function providerJson<T>(url: string, init?: RequestInit): Promise<T> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(5000) });
  const text = await response.text();
  if (!response.ok) throw new Error(`${init?.method ?? 'GET'} ${url}: HTTP ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

/** Events of one kind from a server's JSON log lines. */
export function logEvents(server: ServerProcess, event: string): LogLine[] {
  return server.logs().filter((line) => line.event === event);
}
