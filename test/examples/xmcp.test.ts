import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { Executor, type LogFields } from '../../packages/idem/src/index.js';
import { SqliteStore, openSqlite } from '../../packages/idem/src/adapters/sqlite/index.js';
import {
  authorizeByGrant,
  idempotentTool,
  toolCallContext,
  type IdemTool,
} from '../../packages/idem/src/mcp/index.js';
import {
  xmcpUndeclaredFieldsGuard,
  type XmcpGuardRequest,
  type XmcpGuardResponse,
} from '../../packages/idem/src/integrations/xmcp/index.js';
import {
  REPO_ROOT,
  callTool,
  cleanEnv,
  cleanup,
  closeQuietly,
  connectHttp,
  ensureBuilt,
  freePort,
  track,
} from '../helpers/mcp-fixtures.js';
import { connectWhenReady } from '../helpers/connect-when-ready.js';
import { expectEveryRowPassed, runBuiltCheck } from '../helpers/built-check.js';

// examples/xmcp: an xmcp 1.1 app whose tool file is made by `xmcpTool` (idem/xmcp), built with
// `xmcp build` and run as its own process, on SQLite, behind an xmcp middleware giving the principal
// and Idem's guard refusing undeclared fields (xmcpUndeclaredFieldsGuard).
const APP = join(REPO_ROOT, 'examples', 'xmcp');
const ALICE = `alice-${randomUUID()}`; // principal alice, workspace team-a
const BOB = `bob-${randomUUID()}`; // principal bob, workspace team-b
const CAROL = `carol-${randomUUID()}`; // principal carol, workspace team-a
const TOKENS = {
  [ALICE]: { principal: 'alice', workspaces: ['team-a'] },
  [BOB]: { principal: 'bob', workspaces: ['team-b'] },
  [CAROL]: { principal: 'carol', workspaces: ['team-a'] },
};

/** What the app answers a raw POST to /mcp: the HTTP status and the JSON-RPC messages (JSON or SSE). */
interface RawAnswer {
  readonly status: number;
  readonly contentType: string | null;
  readonly messages: Record<string, unknown>[];
}

/** A POST as the SDK client sends it (2025-11-25, JSON and SSE accepted), with `body` as given. */
async function post(url: string, token: string, body: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      Authorization: `Bearer ${token}`,
      'MCP-Protocol-Version': '2025-11-25',
      ...headers,
    },
    body,
  });
  const text = await response.text();
  const contentType = response.headers.get('content-type');
  const messages = contentType?.startsWith('text/event-stream')
    ? text
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice('data: '.length)) as Record<string, unknown>)
    : text === ''
      ? []
      : [JSON.parse(text) as Record<string, unknown>];
  return { status: response.status, contentType, messages } satisfies RawAnswer;
}

/** One JSON-RPC `tools/call` request for create_ticket. */
function ticketCall(id: number, args: Record<string, unknown>): Record<string, unknown> {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'create_ticket', arguments: args } };
}

describe('guide example xmcp (xmcp build, SQLite, middleware auth)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-xmcp-'));
  const dbPath = join(dir, 'tickets.sqlite');
  const clients: Client[] = [];
  let alice: Client;
  let bob: Client;
  let carol: Client;
  let url: string;

  const tickets = (title: string) => {
    const db = new Database(dbPath, { readonly: true });
    try {
      return db.prepare('SELECT id, workspace, title FROM tickets WHERE title = ? ORDER BY id').all(title);
    } finally {
      db.close();
    }
  };

  beforeAll(async () => {
    ensureBuilt();
    // The app imports `idem` by its package name, as after `npm install idem`.
    // node_modules/idem is the library's workspace package (replaced if it points anywhere else).
    mkdirSync(join(APP, 'node_modules'), { recursive: true });
    const link = join(APP, 'node_modules', 'idem');
    const library = join(REPO_ROOT, 'packages', 'idem');
    if (!existsSync(link) || realpathSync(link) !== realpathSync(library)) {
      rmSync(link, { recursive: true, force: true });
      symlinkSync(library, link, 'dir');
    }
    const port = await freePort();
    // xmcp reads its config (the port) when it builds.
    execFileSync('npx', ['xmcp', 'build'], {
      cwd: APP,
      env: cleanEnv({ PORT: String(port) }),
      stdio: 'pipe',
    });
    const server = track(
      spawn(process.execPath, [join(APP, 'dist', 'http.js')], {
        cwd: dir,
        env: cleanEnv({ TICKETS_DB: dbPath, TICKETS_TOKENS: JSON.stringify(TOKENS) }),
        stdio: ['ignore', 'ignore', 'pipe'],
      }),
    );
    let stderr = '';
    server.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    url = `http://127.0.0.1:${port}/mcp`;
    alice = await connectWhenReady(
      url,
      ALICE,
      'the xmcp example',
      () => server.exitCode !== null,
      () => stderr,
    );
    clients.push(alice);
    bob = await connectHttp(url, BOB);
    clients.push(bob);
    carol = await connectHttp(url, CAROL);
    clients.push(carol);
  }, 240_000);

  afterAll(async () => {
    for (const client of clients.splice(0)) await closeQuietly(client);
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists create_ticket with its typed, required fields, the retry contract and the exact output schema', async () => {
    const [tool, ...others] = (await alice.listTools()).tools;
    expect(others).toEqual([]);
    expect(tool?.name).toBe('create_ticket');
    expect(tool?.inputSchema.properties?.title).toMatchObject({
      type: 'string',
      minLength: 1,
      maxLength: 200,
    });
    expect([...(tool?.inputSchema.required ?? [])].sort()).toEqual(['idempotency_key', 'title', 'workspace']);
    expect(tool?.description).toMatch(/idempotency_key/);
    expect(tool?.annotations?.idempotentHint).toBe(true);
    expect(Object.keys(tool?.outputSchema?.properties ?? {})).toContain('ticket_id');
  });

  it('creates one ticket (a success, never an error), replays the retry, answers payload_conflict', async () => {
    const args = { idempotency_key: randomUUID(), workspace: 'team-a', title: 'Via xmcp' };
    const first = await callTool(alice, 'create_ticket', args);
    expect(first.isError).toBe(false);
    expect(first.sc).toMatchObject({ status: 'succeeded', replayed: false });
    expect(first.sc.ticket_id).toBe(first.sc.resource_id);
    const retry = await callTool(alice, 'create_ticket', args);
    expect(retry.isError).toBe(false);
    expect(retry.sc).toEqual({ ...first.sc, replayed: true });
    const conflict = await callTool(alice, 'create_ticket', { ...args, title: 'Something else' });
    expect(conflict.isError).toBe(true);
    expect(conflict.sc.error?.code).toBe('payload_conflict');
    expect(tickets(args.title)).toEqual([
      { id: first.sc.resource_id, workspace: 'team-a', title: 'Via xmcp' },
    ]);
    expect(tickets('Something else')).toEqual([]);
  });

  it('8 concurrent calls with one key: one ticket, one resource id in every answer', async () => {
    const args = { idempotency_key: randomUUID(), workspace: 'team-a', title: 'Eight at once' };
    const results = await Promise.all(
      Array.from({ length: 8 }, () => callTool(alice, 'create_ticket', args)),
    );
    for (const result of results) expect(result.sc).toMatchObject({ status: 'succeeded' });
    const ids = new Set(results.map((result) => result.sc.resource_id));
    expect(ids.size).toBe(1);
    expect(results.filter((result) => result.sc.replayed === false)).toHaveLength(1);
    expect(tickets(args.title)).toEqual([{ id: [...ids][0], workspace: 'team-a', title: 'Eight at once' }]);
  });

  it('answers a missing field with a coded invalid_argument (xmcp lets it through to Idem)', async () => {
    const args = { idempotency_key: randomUUID(), workspace: 'team-a' };
    const refused = await callTool(alice, 'create_ticket', args);
    expect(refused.isError).toBe(true);
    expect(refused.sc.error?.code).toBe('invalid_argument');
  });

  it('keeps principals and workspaces apart: a token acts only in its grant, a key only for its principal', async () => {
    const args = { idempotency_key: randomUUID(), workspace: 'team-a', title: 'Apart' };
    const mine = await callTool(alice, 'create_ticket', args);
    expect(mine.sc).toMatchObject({ status: 'succeeded', replayed: false });
    const elsewhere = await callTool(alice, 'create_ticket', { ...args, workspace: 'team-b' });
    expect(elsewhere.sc.error?.code).toBe('forbidden');
    const intruder = await callTool(bob, 'create_ticket', args);
    expect(intruder.sc.error?.code).toBe('forbidden');
    const hers = await callTool(carol, 'create_ticket', args);
    expect(hers.sc).toMatchObject({ status: 'succeeded', replayed: false });
    expect(hers.sc.resource_id).not.toBe(mine.sc.resource_id);
    expect(tickets(args.title)).toHaveLength(2);
  });

  // xmcp 1.1.3 copies only the declared fields of the arguments before the handler runs (its
  // rawShapeToStandardSchema without `strict`): without the guard in src/middleware.ts, a field the
  // tool does not declare would never reach Idem and the call would run with it dropped.
  it('refuses a field the tool does not declare with a coded invalid_argument, and creates nothing (the guard)', async () => {
    const args = { idempotency_key: randomUUID(), workspace: 'team-a', title: 'With an extra', priority: 1 };
    const refused = await callTool(alice, 'create_ticket', args);
    expect(refused.isError).toBe(true);
    expect(refused.sc).toEqual({
      status: 'rejected',
      error: {
        code: 'invalid_argument',
        message: 'invalid arguments: arguments: Unrecognized key: "priority"',
        retryable: false,
      },
      next_action: 'Fix the arguments and call again; a rejected call changed nothing.',
    });
    expect(refused.raw.content).toEqual([{ type: 'text', text: JSON.stringify(refused.sc) }]);
    expect(tickets(args.title)).toEqual([]);
    // The refusal took nothing: the same key with the declared fields only creates the ticket.
    const { priority: _dropped, ...declared } = args;
    const created = await callTool(alice, 'create_ticket', declared);
    expect(created.isError).toBe(false);
    expect(created.sc).toMatchObject({ status: 'succeeded', replayed: false });
    expect(tickets(args.title)).toEqual([
      { id: created.sc.resource_id, workspace: 'team-a', title: 'With an extra' },
    ]);
  });

  it('answers the refusal as a JSON-RPC response over HTTP, for a "__proto__" key too, after the token check', async () => {
    const body = JSON.stringify(
      ticketCall(41, { idempotency_key: randomUUID(), workspace: 'team-a', title: 'Proto', priority: 1 }),
    ).replace('"priority":1', '"__proto__":{"admin":true}');
    const answer = await post(url, ALICE, body);
    expect(answer.status).toBe(200);
    expect(answer.contentType).toMatch(/^application\/json/);
    expect(answer.messages).toHaveLength(1);
    expect(answer.messages[0]).toMatchObject({
      jsonrpc: '2.0',
      id: 41,
      result: {
        isError: true,
        structuredContent: {
          status: 'rejected',
          error: {
            code: 'invalid_argument',
            message: 'invalid arguments: arguments: Unrecognized key: "__proto__"',
          },
        },
      },
    });
    // Without a valid token the app's own token check answers first.
    expect((await post(url, 'no-such-token', body)).status).toBe(401);
    expect(tickets('Proto')).toEqual([]);
  });

  it('refuses a whole batch holding such a call (xmcp would run every element), and lets other batches through', async () => {
    const extra = { idempotency_key: randomUUID(), workspace: 'team-a', title: 'Batched extra', priority: 1 };
    const list = { jsonrpc: '2.0', id: 50, method: 'tools/list' };
    const refused = await post(url, ALICE, JSON.stringify([list, ticketCall(51, extra)]));
    expect(refused.status).toBe(400);
    expect(refused.messages).toEqual([
      {
        jsonrpc: '2.0',
        error: {
          code: -32600,
          message:
            'Invalid Request: batch element 1: the arguments of create_ticket hold "priority", a field it does not declare; nothing in this batch was run',
        },
        id: null,
      },
    ]);
    expect(tickets('Batched extra')).toEqual([]);
    const declared = { idempotency_key: randomUUID(), workspace: 'team-a', title: 'Batched' };
    const passed = await post(url, ALICE, JSON.stringify([ticketCall(52, declared)]));
    expect(passed.status).toBe(200);
    expect(passed.messages).toMatchObject([
      { id: 52, result: { structuredContent: { status: 'succeeded', replayed: false } } },
    ]);
    expect(tickets('Batched')).toHaveLength(1);
  });

  it('lets other methods, unknown tools and other protocol revisions through to xmcp untouched', async () => {
    const junk = { name: 'create_ticket', arguments: { priority: 1 } };
    const listed = await post(
      url,
      ALICE,
      JSON.stringify({ jsonrpc: '2.0', id: 60, method: 'tools/list', params: junk }),
    );
    expect(listed.status).toBe(200);
    expect(listed.messages).toMatchObject([{ id: 60, result: { tools: [{ name: 'create_ticket' }] } }]);
    const unknown = await post(
      url,
      ALICE,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 61,
        method: 'tools/call',
        params: { name: 'nope', arguments: { priority: 1 } },
      }),
    );
    expect(unknown.messages).toEqual([
      { jsonrpc: '2.0', id: 61, error: { code: -32602, message: 'Tool nope not found' } },
    ]);
    // The 2026-07-28 revision is left to xmcp (which here refuses the request for its missing envelope).
    const args = { idempotency_key: randomUUID(), workspace: 'team-a', title: 'Later revision', priority: 1 };
    const later = await post(url, ALICE, JSON.stringify(ticketCall(62, args)), {
      'MCP-Protocol-Version': '2026-07-28',
    });
    expect(later.status).toBe(400);
    expect(later.messages[0]).not.toHaveProperty('result');
    expect(tickets('Later revision')).toEqual([]);
  });

  it('passes idem check, every row, with a second principal (the last step of the guide)', async () => {
    expectEveryRowPassed(await runBuiltCheck(url, ALICE, CAROL, ['--arg', 'workspace=team-a']));
  }, 150_000);

  it('type-checks as an app of its own, importing idem/xmcp by package name', () => {
    // Not part of the root tsconfig (its own package.json ends the self-reference to `idem`). Last,
    // so that the clients never sit idle through it past the server's keep-alive timeout.
    const tsc = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    expect(() =>
      execFileSync(process.execPath, [tsc, '-p', join(APP, 'tsconfig.json')], { cwd: APP, stdio: 'pipe' }),
    ).not.toThrow();
  });
});

describe('xmcpUndeclaredFieldsGuard (in process, a real Idem tool on SQLite in memory)', () => {
  const lines: LogFields[] = [];
  const capture = (_event: string, fields?: LogFields) => void lines.push(fields ?? {});
  const store = new SqliteStore(openSqlite(':memory:'));
  const executor = new Executor({
    store,
    authorize: authorizeByGrant,
    logger: { info: capture, warn: capture, error: capture },
  });
  const effect = vi.fn(() => ({ resource_id: 'n_1' }));
  const tool = idempotentTool(executor, {
    name: 'add_note',
    version: 1,
    description: 'Adds a note.',
    inputSchema: z.object({ body: z.string() }),
    effect,
  });
  const guard = xmcpUndeclaredFieldsGuard([tool]);
  const auth = {
    token: 't',
    clientId: 'alice',
    scopes: [],
    extra: { principal: 'alice', workspaces: ['w'] },
  };
  const extraArgs = () => ({ idempotency_key: randomUUID(), workspace: 'w', body: 'hi', tag: 'x' });
  const call = (args: unknown, params: Record<string, unknown> = {}) => ({
    jsonrpc: '2.0',
    id: 7,
    method: 'tools/call',
    params: { name: 'add_note', arguments: args, ...params },
  });
  const request = (body: unknown, headers: Record<string, string> = {}): XmcpGuardRequest => ({
    method: 'POST',
    headers: {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      ...headers,
    },
    body,
    auth,
  });

  /** Runs the guard once: what it wrote (status, headers, parsed body) and how it called `next`. */
  async function run(req: XmcpGuardRequest, guarded: typeof guard = guard) {
    const written: { status?: number; headers?: Record<string, string>; body?: unknown } = {};
    const res: XmcpGuardResponse = {
      writeHead: (status, headers) => Object.assign(written, { status, headers }),
      end: (chunk) => Object.assign(written, { body: JSON.parse(chunk) as unknown }),
    };
    const next = vi.fn();
    await guarded(req, res, next);
    return { written, next };
  }

  afterAll(() => store.close());

  it("answers with the tool's own refusal (handle of the arguments as sent), logged with the principal", async () => {
    const args = extraArgs();
    lines.length = 0;
    const { written, next } = await run(request(call(args)));
    expect(next).not.toHaveBeenCalled();
    expect(written.status).toBe(200);
    expect(written.headers).toEqual({ 'Content-Type': 'application/json' });
    const own = await tool.handle(args, toolCallContext(auth, undefined));
    expect(own.isError).toBe(true);
    expect(written.body).toEqual({ jsonrpc: '2.0', id: 7, result: own });
    expect(effect).not.toHaveBeenCalled();
    expect(lines[0]).toMatchObject({ principal: 'alice', outcome: 'invalid_argument' });
  });

  it('reads the parsed body without changing it, and hands a declared-only call on', async () => {
    const body = call(extraArgs());
    const before = structuredClone(body);
    const req = request(body);
    await run(req);
    expect(req.body).toBe(body);
    expect(body).toEqual(before);
    const { idempotency_key, workspace } = extraArgs();
    const declared = request(call({ idempotency_key, workspace, body: 'hi' }));
    const { written, next } = await run(declared);
    expect(next).toHaveBeenCalledExactlyOnceWith();
    expect(written).toEqual({});
  });

  it.each([
    ['another HTTP method', { ...request(call(extraArgs())), method: 'GET' }],
    ['an Accept header without SSE', request(call(extraArgs()), { accept: 'application/json' })],
    [
      'the 2026-07-28 revision (header)',
      request(call(extraArgs()), { 'mcp-protocol-version': '2026-07-28' }),
    ],
    [
      'an unsupported revision (header)',
      request(call(extraArgs()), { 'mcp-protocol-version': '1999-01-01' }),
    ],
    [
      'the 2026-07-28 revision (_meta envelope)',
      request(call(extraArgs(), { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } })),
    ],
    ['another method', request({ ...call(extraArgs()), method: 'tools/list' })],
    ['a notification (no id)', request({ ...call(extraArgs()), id: undefined })],
    ['no jsonrpc: "2.0"', request({ ...call(extraArgs()), jsonrpc: '1.0' })],
    ['an unknown tool', request(call(extraArgs(), { name: 'other' }))],
    ['arguments that are not an object', request(call(['tag']))],
    ['a batch without such a call', request([call({ idempotency_key: 'k', workspace: 'w', body: 'hi' })])],
    ['no parsed body', request(undefined)],
  ])('hands on untouched: %s', async (_, req) => {
    const { written, next } = await run(req);
    expect(next).toHaveBeenCalledExactlyOnceWith();
    expect(written).toEqual({});
  });

  it('refuses a batch holding such a call as a whole, without calling the tool', async () => {
    lines.length = 0;
    const { written, next } = await run(
      request([{ jsonrpc: '2.0', method: 'ping', id: 1 }, call(extraArgs())]),
    );
    expect(next).not.toHaveBeenCalled();
    expect(written.status).toBe(400);
    expect(written.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    expect(lines).toEqual([]);
  });

  it('answers only what the schema refuses, and hands an unexpected failure to next(error)', async () => {
    // A hand-made IdemTool whose schema lets extra keys through: the guard leaves the call to xmcp.
    const loose: IdemTool = { ...tool, name: 'loose', argumentsSchema: tool.argumentsSchema.loose() };
    const failing: IdemTool = { ...tool, name: 'failing', handle: () => Promise.reject(new Error('boom')) };
    const both = xmcpUndeclaredFieldsGuard([loose, failing]);
    const passed = await run(request(call(extraArgs(), { name: 'loose' })), both);
    expect(passed.next).toHaveBeenCalledExactlyOnceWith();
    const failed = await run(request(call(extraArgs(), { name: 'failing' })), both);
    expect(failed.next).toHaveBeenCalledExactlyOnceWith(expect.objectContaining({ message: 'boom' }));
    expect(failed.written).toEqual({});
  });

  it('refuses two tools with one name', () => {
    expect(() => xmcpUndeclaredFieldsGuard([tool, tool])).toThrow(TypeError);
  });
});
