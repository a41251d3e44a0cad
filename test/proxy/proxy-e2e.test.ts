import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CallToolResult, Client, Transport } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  REPO_ROOT,
  cleanEnv,
  cleanup,
  closeQuietly,
  connectHttp,
  dropFirstResponse,
  ensureBuilt,
  freePort,
  makeTempDir,
  startServerProcess,
  track,
  type DropFirstResponse,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';
import { adminPool, dropSchema, freshSchema } from '../helpers/multi-fixtures.js';
import { POSTGRES_URL, postgresAvailable } from '../helpers/postgres-fixtures.js';
import { runCli } from '../helpers/durable-fixtures.js';

// `idem proxy` in front of real MCP servers (the published server-memory and server-filesystem over
// stdio, and a small test upstream over stdio and Streamable HTTP that records every call it
// receives), each case on SQLite and on PostgreSQL: real processes, real kills.

const MEMORY = join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js');
const FILESYSTEM = join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const UPSTREAM = join(REPO_ROOT, 'test/helpers/proxy-upstream.mjs');
const EVERYTHING = join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

interface Backend {
  readonly name: 'sqlite' | 'postgres';
  /** The --db arguments of a new database (one per case); `again` reuses the previous one. */
  db(dir: string): string[];
}

const schemas: string[] = [];
const BACKENDS: Backend[] = [
  { name: 'sqlite', db: (dir) => ['--db', join(dir, 'proxy.sqlite')] },
  ...(postgresAvailable
    ? [
        {
          name: 'postgres' as const,
          db: () => {
            const schema = freshSchema();
            schemas.push(schema);
            return ['--db', POSTGRES_URL, '--db-schema', schema];
          },
        },
      ]
    : []),
];

let clients: Client[] = [];

beforeAll(() => ensureBuilt());
afterEach(async () => {
  await Promise.all(clients.map(closeQuietly));
  clients = [];
  await cleanup();
});
afterAll(async () => {
  if (schemas.length === 0) return;
  const pool = adminPool('proxy');
  for (const schema of schemas) await dropSchema(pool, schema);
  await pool.end();
});

function startProxy(args: string[], env: Record<string, string> = {}): Promise<ServerProcess> {
  return startServerProcess({ command: 'proxy', args, env, readyTimeoutMs: 30_000 });
}

async function connect(proxy: ServerProcess, wrap?: (t: Transport) => Transport): Promise<Client> {
  const client = await connectHttp(proxy.url, undefined, wrap === undefined ? {} : { wrap });
  clients.push(client);
  return client;
}

type Result = CallToolResult & { _meta?: Record<string, unknown> };

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Result> {
  return (await client.callTool({ name, arguments: args }, { timeout: 30_000 })) as Result;
}

function operationIdOf(result: Result): unknown {
  return result._meta?.['idem/operation_id'];
}

function errorCodeOf(result: Result): string | undefined {
  const sc = result.structuredContent as { error?: { code?: string } } | undefined;
  return sc?.error?.code;
}

/** The calls the test upstream received, from its log (one JSON line per call, written on arrival). */
function received(log: string, label: string): number {
  if (!existsSync(log)) return 0;
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .filter((line) => (JSON.parse(line) as { label: string }).label === label).length;
}

async function waitUntil(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** The test upstream over Streamable HTTP, as its own process. */
async function startHttpUpstream(log: string): Promise<string> {
  const port = await freePort();
  const proc = track(
    spawn(process.execPath, [UPSTREAM], {
      cwd: REPO_ROOT,
      env: cleanEnv({ UPSTREAM_LOG: log, UPSTREAM_HTTP_PORT: String(port) }),
      stdio: ['ignore', 'ignore', 'pipe'],
    }),
  );
  await new Promise<void>((resolve, reject) => {
    proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      if (chunk.includes('listening')) resolve();
    });
    proc.once('exit', (code) => reject(new Error(`upstream exited (${code})`)));
  });
  return `http://127.0.0.1:${port}/mcp`;
}

/** server-everything over Streamable HTTP (its `streamableHttp` transport), as its own process. */
async function startEverything(): Promise<string> {
  const port = await freePort();
  const proc = track(
    spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
      cwd: REPO_ROOT,
      env: cleanEnv({ PORT: String(port) }),
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  await new Promise<void>((resolve, reject) => {
    const ready = (chunk: string) => {
      if (chunk.includes('listening')) resolve();
    };
    proc.stdout?.setEncoding('utf8').on('data', ready);
    proc.stderr?.setEncoding('utf8').on('data', ready);
    proc.once('exit', (code) => reject(new Error(`server-everything exited (${code})`)));
  });
  return `http://127.0.0.1:${port}/mcp`;
}

/** 20 calls at once with one key, over `targets` in turn. */
function concurrent(targets: Client[], name: string, args: Record<string, unknown>): Promise<Result[]> {
  return Promise.all(
    Array.from({ length: 20 }, (_, i) => call(targets[i % targets.length] as Client, name, args)),
  );
}

function expectOneForward(results: Result[]): void {
  const ids = new Set(results.map(operationIdOf));
  expect(ids.size).toBe(1);
  expect(results.filter((r) => r._meta?.['idem/replayed'] === false)).toHaveLength(1);
  const bodies = new Set(results.map((r) => JSON.stringify([r.content, r.structuredContent, r.isError])));
  expect(bodies.size).toBe(1);
}

describe.each(BACKENDS)('idem proxy on $name', (backend) => {
  it('server-memory over stdio: a lost reply is replayed, 20 calls with one key forward once, other arguments conflict', async () => {
    const dir = makeTempDir('idem-proxy-');
    const proxy = await startProxy([...backend.db(dir), '--', 'node', MEMORY], {
      MEMORY_FILE_PATH: join(dir, 'memory.jsonl'),
    });
    let drop: DropFirstResponse | undefined;
    const lossy = await connect(proxy, (t) => (drop = dropFirstResponse(t)));
    const client = await connect(proxy);
    const tools = (await client.listTools()).tools;
    const create = tools.find((tool) => tool.name === 'create_entities');
    expect(create?.inputSchema.required).toContain('idempotency_key');
    expect(create?.description).toMatch(/idempotency_key/);
    expect(tools.find((tool) => tool.name === 'read_graph')?.inputSchema.properties).not.toHaveProperty(
      'idempotency_key',
    );
    expect(tools.map((tool) => tool.name)).toContain('get_operation');

    const args = {
      idempotency_key: 'lost-1',
      entities: [{ name: 'alpha', entityType: 'test', observations: ['one'] }],
    };
    await expect(
      lossy.callTool({ name: 'create_entities', arguments: args }, { timeout: 1500 }),
    ).rejects.toThrow();
    const dropped = (drop?.dropped as { result?: Result } | undefined)?.result;
    expect(dropped?.structuredContent).toEqual({ entities: args.entities });
    const retry = await call(client, 'create_entities', args);
    expect(retry.structuredContent).toEqual(dropped?.structuredContent);
    expect(retry.content).toEqual(dropped?.content);
    expect(operationIdOf(retry)).toBe(operationIdOf(dropped as Result));
    expect(retry._meta?.['idem/replayed']).toBe(true);

    // A second forward would have answered `entities: []` (server-memory skips a name it has).
    const burst = await concurrent([client, lossy], 'create_entities', {
      idempotency_key: 'burst-1',
      entities: [{ name: 'beta', entityType: 'test', observations: [] }],
    });
    expectOneForward(burst);
    expect(burst[0]?.structuredContent).toEqual({
      entities: [{ name: 'beta', entityType: 'test', observations: [] }],
    });
    const burstId = operationIdOf(burst[0] as Result);
    // One forward: by this proxy's caller (proxy.forwarded), or by its worker (op.attempt) when the
    // worker claimed the accepted call first. The log line may reach us after the replies.
    const forwarded = (l: { event?: string; operation_id?: unknown }) =>
      (l.event === 'proxy.forwarded' || l.event === 'op.attempt') && l.operation_id === burstId;
    await proxy.waitForLogs(forwarded, 1);
    expect(proxy.logs().filter(forwarded)).toHaveLength(1);

    const conflict = await call(client, 'create_entities', {
      idempotency_key: 'lost-1',
      entities: [{ name: 'gamma', entityType: 'test', observations: [] }],
    });
    expect(conflict.isError).toBe(true);
    expect(errorCodeOf(conflict)).toBe('payload_conflict');

    const graph = await call(client, 'read_graph', {});
    const names = (graph.structuredContent as { entities: { name: string }[] }).entities.map((e) => e.name);
    expect(names.sort()).toEqual(['alpha', 'beta']);

    const status = await call(client, 'get_operation', { operation_id: operationIdOf(retry) });
    expect((status.structuredContent as { status: string }).status).toBe('succeeded');
  });

  it('server-filesystem over stdio: move_file is forwarded once per key', async () => {
    const dir = makeTempDir('idem-proxy-');
    const files = join(dir, 'files');
    mkdirSync(files);
    for (const name of ['a.txt', 'b.txt']) writeFileSync(join(files, name), name);
    const proxy = await startProxy([...backend.db(dir), '--', 'node', FILESYSTEM, files]);
    const client = await connect(proxy);
    const move = (key: string, from: string, to: string) =>
      call(client, 'move_file', {
        idempotency_key: key,
        source: join(files, from),
        destination: join(files, to),
      });
    const first = await move('mv-1', 'a.txt', 'a2.txt');
    expect(first.isError).not.toBe(true);
    // Forwarded again, the move would fail: a.txt is gone.
    const again = await move('mv-1', 'a.txt', 'a2.txt');
    expect(again.isError).not.toBe(true);
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(again._meta?.['idem/replayed']).toBe(true);

    const burst = await concurrent([client], 'move_file', {
      idempotency_key: 'mv-2',
      source: join(files, 'b.txt'),
      destination: join(files, 'b2.txt'),
    });
    expectOneForward(burst);
    expect(burst[0]?.isError).not.toBe(true);
    expect(readFileSync(join(files, 'b2.txt'), 'utf8')).toBe('b.txt');
  });

  it('an upstream over Streamable HTTP: answers and tool errors are replayed, 20 calls forward once', async () => {
    const dir = makeTempDir('idem-proxy-');
    const log = join(dir, 'calls.jsonl');
    const url = await startHttpUpstream(log);
    const proxy = await startProxy([...backend.db(dir), '--upstream', url]);
    const client = await connect(proxy);
    const first = await call(client, 'record_call', { idempotency_key: 'h-1', label: 'one' });
    const retry = await call(client, 'record_call', { idempotency_key: 'h-1', label: 'one' });
    expect(retry.content).toEqual(first.content);
    expect(received(log, 'one')).toBe(1);

    const burst = await concurrent([client], 'record_call', { idempotency_key: 'h-2', label: 'two' });
    expectOneForward(burst);
    expect(received(log, 'two')).toBe(1);

    const failed = await call(client, 'fail_call', { idempotency_key: 'h-3', label: 'three' });
    expect(failed.isError).toBe(true);
    const failedAgain = await call(client, 'fail_call', { idempotency_key: 'h-3', label: 'three' });
    expect(failedAgain.isError).toBe(true);
    expect(failedAgain.content).toEqual(failed.content);
    expect(received(log, 'three')).toBe(1);

    // A read-only tool passes through, without a key.
    const counted = await call(client, 'count_calls', {});
    expect((counted.structuredContent as { calls: string[] }).calls).toHaveLength(3);
  });

  it('server-everything over Streamable HTTP: a toggle is forwarded once per key', async () => {
    const dir = makeTempDir('idem-proxy-');
    const url = await startEverything();
    const proxy = await startProxy([...backend.db(dir), '--upstream', url]);
    const client = await connect(proxy);
    const tools = (await client.listTools()).tools;
    const toggle = tools.find((tool) => tool.name === 'toggle-simulated-logging');
    expect(toggle?.inputSchema.required).toEqual(['idempotency_key']);
    expect(tools.find((tool) => tool.name === 'echo')?.inputSchema.properties).not.toHaveProperty(
      'idempotency_key',
    );
    const text = (result: Result) => (result.content[0] as { text: string }).text;
    // Each forward flips the upstream's state: a second forward would answer "Stopped".
    const started = await call(client, 'toggle-simulated-logging', { idempotency_key: 't-1' });
    expect(text(started)).toMatch(/^Started/);
    const retry = await call(client, 'toggle-simulated-logging', { idempotency_key: 't-1' });
    expect(text(retry)).toBe(text(started));
    expect(retry._meta?.['idem/replayed']).toBe(true);
    const burst = await concurrent([client], 'toggle-simulated-logging', { idempotency_key: 't-2' });
    expectOneForward(burst);
    expect(text(burst[0] as Result)).toMatch(/^Stopped/);
    const again = await call(client, 'toggle-simulated-logging', { idempotency_key: 't-3' });
    expect(text(again)).toMatch(/^Started/);
    const echoed = await call(client, 'echo', { message: 'hello' });
    expect(text(echoed)).toMatch(/hello/);
  });

  it('a tool with a declared key of its own: an ambiguous attempt is resent with the same key', async () => {
    const dir = makeTempDir('idem-proxy-');
    const log = join(dir, 'calls.jsonl');
    const proxy = await startProxy(
      [
        ...backend.db(dir),
        '--call-timeout',
        '1s',
        '--upstream-key',
        'keyed_call=request_id',
        '--',
        'node',
        UPSTREAM,
      ],
      { UPSTREAM_LOG: log },
    );
    const client = await connect(proxy);
    const keyed = (await client.listTools()).tools.find((tool) => tool.name === 'keyed_call');
    expect(keyed?.inputSchema.required).toEqual(['label', 'idempotency_key']);
    expect(keyed?.inputSchema.properties).not.toHaveProperty('request_id');
    // The first attempt outlives --call-timeout (ambiguous); the worker resends it with the same key.
    const args = { idempotency_key: 'uk-1', label: 'keyed', delay_ms: 3000 };
    let answer = await call(client, 'keyed_call', args);
    const deadline = Date.now() + 20_000;
    while (errorCodeOf(answer) === 'in_progress' && Date.now() < deadline) {
      await sleep(200);
      answer = await call(client, 'keyed_call', args);
    }
    expect(answer.isError).not.toBe(true);
    const lines = readFileSync(log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { request_id: string; replay: boolean });
    const operationId = operationIdOf(answer) as string;
    // Both attempts carried the proxy's key (never the caller's argument); the upstream acted once.
    expect(lines.map((line) => line.request_id)).toEqual([`idem-${operationId}`, `idem-${operationId}`]);
    expect(lines.map((line) => line.replay)).toEqual([false, true]);
    expect((answer.content[0] as { text: string }).text).toBe(`recorded keyed once for idem-${operationId}`);
  });

  it('an upstream killed mid-call: outcome_unknown naming the tool and the window, never forwarded again', async () => {
    const dir = makeTempDir('idem-proxy-');
    const log = join(dir, 'calls.jsonl');
    const pidFile = join(dir, 'upstream.pid');
    const db = backend.db(dir);
    const proxy = await startProxy([...db, '--', 'node', UPSTREAM], {
      UPSTREAM_LOG: log,
      UPSTREAM_PID_FILE: pidFile,
    });
    const client = await connect(proxy);
    const args = { idempotency_key: 'k-1', label: 'slow', delay_ms: 60_000 };
    const pending = call(client, 'record_call', args);
    await waitUntil(() => received(log, 'slow') === 1, 15_000, 'the upstream to receive the call');
    process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
    const answer = await pending;
    expect(answer.isError).toBe(true);
    expect(errorCodeOf(answer)).toBe('outcome_unknown');
    const sc = answer.structuredContent as { next_action: string; operation_id: string };
    expect(sc.next_action).toMatch(/record_call/);
    expect(sc.next_action).toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z and \d{4}-/);

    const retry = await call(client, 'record_call', args);
    expect(errorCodeOf(retry)).toBe('outcome_unknown');
    expect((retry.structuredContent as { operation_id: string }).operation_id).toBe(sc.operation_id);
    // The upstream is started again for a new key; the old one is never resent.
    const fresh = await call(client, 'record_call', { idempotency_key: 'k-2', label: 'fresh' });
    expect(fresh.isError).not.toBe(true);
    expect(received(log, 'slow')).toBe(1);

    // `idem ops resolve`, another process, takes the upstream's answer the proxy stored as the
    // tool's result field (its declaration), and refuses a field the proxied tool does not have.
    const other = await runCli([
      ...['ops', 'resolve', sc.operation_id, '--succeeded', '--resource-id', 'r-1'],
      ...['--result-json', '{"deployment_id":"dep_1"}', ...db],
    ]);
    expect(other.code, other.stderr).toBe(2);
    expect(other.stderr).toContain('record_call results have no field "deployment_id"');
    const settled = await runCli([
      ...['ops', 'resolve', sc.operation_id, '--succeeded', '--resource-id', 'r-1', '--result-json'],
      ...['{"upstream_result":{"content":[{"type":"text","text":"recorded slow"}]}}', ...db],
    ]);
    expect(settled.code, settled.stderr).toBe(0);
    const settledRetry = await call(client, 'record_call', args);
    expect(settledRetry.isError).not.toBe(true);
    expect((settledRetry.content[0] as { text: string }).text).toBe('recorded slow');
  }, 90_000); // then two CLI processes: seconds each on a loaded two-core machine

  it('a proxy killed mid-call: the call ends outcome_unknown once its lease expires, never forwarded again', async () => {
    const dir = makeTempDir('idem-proxy-');
    const log = join(dir, 'calls.jsonl');
    const pidFile = join(dir, 'upstream.pid');
    const db = backend.db(dir);
    const env = { UPSTREAM_LOG: log, UPSTREAM_PID_FILE: pidFile };
    const proxy = await startProxy([...db, '--lease', '1s', '--', 'node', UPSTREAM], env);
    const client = await connect(proxy);
    const args = { idempotency_key: 'p-1', label: 'orphan', delay_ms: 60_000 };
    const pending = call(client, 'record_call', args).catch(() => 'lost');
    await waitUntil(() => received(log, 'orphan') === 1, 15_000, 'the upstream to receive the call');
    await proxy.kill('SIGKILL');
    expect(await pending).toBe('lost');
    try {
      process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
    } catch {
      // already gone with its stdin
    }
    const second = await startProxy([...db, '--lease', '1s', '--', 'node', UPSTREAM], env);
    const client2 = await connect(second);
    let retry = await call(client2, 'record_call', args);
    const deadline = Date.now() + 20_000;
    while (errorCodeOf(retry) === 'in_progress' && Date.now() < deadline) {
      await sleep(200);
      retry = await call(client2, 'record_call', args);
    }
    expect(errorCodeOf(retry)).toBe('outcome_unknown');
    expect((retry.structuredContent as { next_action: string }).next_action).toMatch(/record_call/);
    expect(received(log, 'orphan')).toBe(1);
  });

  it('an upstream whose input schema changed refuses the keys of the old one', async () => {
    const dir = makeTempDir('idem-proxy-');
    const log = join(dir, 'calls.jsonl');
    const db = backend.db(dir);
    const first = await startProxy([...db, '--', 'node', UPSTREAM], { UPSTREAM_LOG: log });
    const client = await connect(first);
    const args = { idempotency_key: 'v-1', label: 'versioned' };
    expect((await call(client, 'record_call', args)).isError).not.toBe(true);
    await closeQuietly(client);
    await first.kill('SIGTERM');

    const second = await startProxy([...db, '--', 'node', UPSTREAM], {
      UPSTREAM_LOG: log,
      UPSTREAM_VARIANT: 'b',
    });
    const client2 = await connect(second);
    const refused = await call(client2, 'record_call', args);
    expect(refused.isError).toBe(true);
    expect(errorCodeOf(refused)).toBe('version_conflict');
    expect(received(log, 'versioned')).toBe(1);
    // A new key runs under the new schema.
    const fresh = await call(client2, 'record_call', { idempotency_key: 'v-2', label: 'new', priority: 1 });
    expect(fresh.isError).not.toBe(true);
  });
});

describe('two idem proxies on one PostgreSQL database', () => {
  if (!postgresAvailable) {
    it('is not run: PostgreSQL unreachable (see stderr)', () => expect(postgresAvailable).toBe(false));
    return;
  }
  it('forward one key once', async () => {
    const dir = makeTempDir('idem-proxy-');
    const log = join(dir, 'calls.jsonl');
    const url = await startHttpUpstream(log);
    const db = (BACKENDS.find((b) => b.name === 'postgres') as Backend).db(dir);
    const a = await startProxy([...db, '--upstream', url]);
    const b = await startProxy([...db, '--upstream', url]);
    const targets = [await connect(a), await connect(b)];
    const burst = await concurrent(targets, 'record_call', { idempotency_key: 'two-1', label: 'shared' });
    expectOneForward(burst);
    expect(received(log, 'shared')).toBe(1);
    // Each proxy answered some of the calls.
    expect(a.logs().some((l) => l.event === 'idem.call')).toBe(true);
    expect(b.logs().some((l) => l.event === 'idem.call')).toBe(true);
  });
});

describe('idem proxy with bearer tokens', () => {
  it('authenticates every call, scopes keys by principal and refuses a workspace the token lacks', async () => {
    const dir = makeTempDir('idem-proxy-');
    const log = join(dir, 'calls.jsonl');
    const url = await startHttpUpstream(log);
    const tokens = join(dir, 'tokens.json');
    const alice = 'alice-token-0123456789abcdef';
    const bob = 'bob-token-0123456789abcdef';
    const outsider = 'outsider-token-0123456789abcdef';
    writeFileSync(
      tokens,
      JSON.stringify({
        [alice]: { principal: 'alice', workspaces: ['team'] },
        [bob]: { principal: 'bob', workspaces: ['team'] },
        [outsider]: { principal: 'carol', workspaces: ['elsewhere'] },
      }),
    );
    const proxy = await startProxy([
      '--db',
      join(dir, 'proxy.sqlite'),
      '--tokens',
      tokens,
      '--workspace',
      'team',
      '--upstream',
      url,
    ]);
    await expect(connectHttp(proxy.url)).rejects.toThrow(/401|nauthorized/);
    const a = await connectHttp(proxy.url, alice);
    const b = await connectHttp(proxy.url, bob);
    const c = await connectHttp(proxy.url, outsider);
    clients.push(a, b, c);
    const args = { idempotency_key: 'same-key', label: 'auth' };
    const fromA = await call(a, 'record_call', args);
    const fromB = await call(b, 'record_call', args);
    expect(operationIdOf(fromB)).not.toBe(operationIdOf(fromA));
    expect((await call(a, 'record_call', args)).content).toEqual(fromA.content);
    expect(received(log, 'auth')).toBe(2);
    const refused = await call(c, 'record_call', args);
    expect(errorCodeOf(refused)).toBe('forbidden');
    expect(received(log, 'auth')).toBe(2);
    // The status tool shows an operation to its owner only.
    const own = await call(a, 'get_operation', { operation_id: operationIdOf(fromA) });
    expect((own.structuredContent as { status: string }).status).toBe('succeeded');
    const other = await call(b, 'get_operation', { operation_id: operationIdOf(fromA) });
    expect(errorCodeOf(other)).toBe('not_found');
  });
});
