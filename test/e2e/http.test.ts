import { randomUUID } from 'node:crypto';
import { statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import {
  callTool,
  cleanup,
  closeQuietly,
  connectHttp,
  dropFirstResponse,
  ensureBuilt,
  listNotes,
  makeTempDir,
  startServerProcess,
  type DropFirstResponse,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';

// Every body and token used in this file; no server's stderr may ever contain one of them.
const secrets: string[] = [];
let servers: ServerProcess[] = [];
let clients: Client[] = [];

function secretBody(label: string): string {
  const body = `private-body-${label}-${randomUUID()}`;
  secrets.push(body);
  return body;
}

function secretToken(label: string): string {
  const token = `tok-${label}-${randomUUID()}`;
  secrets.push(token);
  return token;
}

async function server(options: Parameters<typeof startServerProcess>[0] = {}): Promise<ServerProcess> {
  const started = await startServerProcess(options);
  servers.push(started);
  return started;
}

async function client(url: string, token?: string, wrap?: (t: DropFirstResponse) => void): Promise<Client> {
  const connected = await connectHttp(url, token, {
    wrap: (transport) => {
      if (wrap === undefined) return transport;
      const dropping = dropFirstResponse(transport);
      wrap(dropping);
      return dropping;
    },
  });
  clients.push(connected);
  return connected;
}

function writeTokens(path: string, grants: Record<string, { principal: string; workspaces: string[] }>) {
  const before = (() => {
    try {
      return statSync(path).mtimeMs;
    } catch {
      return undefined;
    }
  })();
  writeFileSync(path, JSON.stringify(grants));
  if (before !== undefined) {
    // Move the mtime well away from the old one, whatever the file system's time resolution.
    const mtime = new Date(Math.max(before, statSync(path).mtimeMs) + 5_000);
    utimesSync(path, mtime, mtime);
  }
}

function assertNoSecretsLogged(stderr: string): void {
  for (const secret of secrets) expect(stderr, `stderr leaked ${secret.slice(0, 20)}…`).not.toContain(secret);
}

beforeAll(() => ensureBuilt());

afterEach(async () => {
  try {
    for (const s of servers) assertNoSecretsLogged(s.stderrLines().join('\n'));
  } finally {
    await Promise.all(clients.map(closeQuietly));
    clients = [];
    servers = [];
    await cleanup();
  }
});

afterAll(cleanup);

describe('reference server over Streamable HTTP (dev mode)', () => {
  it('creates a note and replays the same result for the same key', async () => {
    const dir = makeTempDir();
    const srv = await server({ args: ['--db', join(dir, 'db.sqlite')] });
    expect(srv.url).toBe(`http://127.0.0.1:${srv.port}/mcp`);
    const c = await client(srv.url);
    const body = secretBody('create');

    const first = await callTool(c, 'create_note', { idempotency_key: 'k-1', workspace: 'default', body });
    expect(first.isError).toBe(false);
    expect(first.sc).toMatchObject({ status: 'succeeded', replayed: false });
    expect(first.sc.operation_id).toMatch(/\S/);
    expect(first.sc.resource_id).toMatch(/\S/);
    expect(first.sc.note_id).toBe(first.sc.resource_id);

    const again = await callTool(c, 'create_note', { idempotency_key: 'k-1', workspace: 'default', body });
    expect(again.isError).toBe(false);
    expect(again.sc).toEqual({ ...first.sc, replayed: true });

    const conflict = await callTool(c, 'create_note', {
      idempotency_key: 'k-1',
      workspace: 'default',
      body: secretBody('other'),
    });
    expect(conflict.isError).toBe(true);
    expect(conflict.sc.error?.code).toBe('payload_conflict');

    const notes = await listNotes(c);
    expect(notes.map((n) => n.note_id)).toEqual([first.sc.resource_id]);
    expect(notes[0]?.body).toBe(body);

    const op = await callTool(c, 'get_operation', { operation_id: first.sc.operation_id });
    expect(op.isError).toBe(false);
    expect(op.sc).toMatchObject({
      operation_id: first.sc.operation_id,
      resource_id: first.sc.resource_id,
      operation: 'create_note',
      workspace: 'default',
    });
  });

  it('recovers the same operation after the response was dropped on the way back', async () => {
    const dir = makeTempDir();
    const srv = await server({ args: ['--db', join(dir, 'db.sqlite')] });
    let dropper: DropFirstResponse | undefined;
    const c = await client(srv.url, undefined, (d) => (dropper = d));
    const args = { idempotency_key: randomUUID(), workspace: 'default', body: secretBody('dropped') };

    const lost = await callTool(c, 'create_note', args, { timeout: 1000 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(lost).toBeInstanceOf(SdkError);
    expect((lost as SdkError).code).toBe(SdkErrorCode.RequestTimeout);
    const original = dropper?.droppedResult();
    expect(original).toMatchObject({ status: 'succeeded', replayed: false });

    const retry = await callTool(c, 'create_note', args);
    expect(retry.isError).toBe(false);
    expect(retry.sc).toMatchObject({
      status: 'succeeded',
      replayed: true,
      operation_id: original?.operation_id,
      resource_id: original?.resource_id,
    });

    const notes = await listNotes(c);
    expect(notes).toHaveLength(1);
    expect(notes[0]?.note_id).toBe(original?.resource_id);
  });

  it('gives 8 concurrent clients with one key one operation and one note, across two instances', async () => {
    // Two server processes on one database, as behind a load balancer: the clients alternate
    // between them, so calls really overlap and the second instance must see the first's commit.
    const dir = makeTempDir();
    const dbPath = join(dir, 'db.sqlite');
    const instances = await Promise.all([
      server({ args: ['--db', dbPath] }),
      server({ args: ['--db', dbPath] }),
    ]);
    const many = await Promise.all(
      Array.from({ length: 8 }, (_, i) => client((instances[i % 2] as ServerProcess).url)),
    );
    const args = { idempotency_key: `race-${randomUUID()}`, workspace: 'default', body: secretBody('race') };

    const results = await Promise.all(many.map((c) => callTool(c, 'create_note', args)));
    for (const r of results) expect(r.isError).toBe(false);
    const first = results[0]?.sc;
    const { replayed: _r, ...stable } = first ?? {};
    for (const r of results) {
      const { replayed: _x, ...rest } = r.sc;
      expect(rest).toEqual(stable);
    }
    expect(results.filter((r) => r.sc.replayed === false)).toHaveLength(1);
    expect(results.filter((r) => r.sc.replayed === true)).toHaveLength(7);

    const notes = await listNotes(many[0] as Client);
    expect(notes.map((n) => n.note_id)).toEqual([stable.resource_id]);
  });
});

describe('reference server over Streamable HTTP with bearer tokens', () => {
  let tokensPath: string;
  let dbPath: string;
  let alice: string;
  let bob: string;

  async function tokenServer(): Promise<ServerProcess> {
    const dir = makeTempDir();
    tokensPath = join(dir, 'tokens.json');
    dbPath = join(dir, 'db.sqlite');
    alice = secretToken('alice');
    bob = secretToken('bob');
    writeTokens(tokensPath, {
      [alice]: { principal: 'alice', workspaces: ['shared', 'alice-ws'] },
      [bob]: { principal: 'bob', workspaces: ['shared'] },
    });
    return server({ args: ['--db', dbPath, '--tokens', tokensPath] });
  }

  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fetch', version: '0' } },
  };

  async function post(url: string, headers: Record<string, string>) {
    return fetch(url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        ...headers,
      },
      body: JSON.stringify(initialize),
    });
  }

  it('answers 401 to a missing, unknown or malformed token and 200 to a known one', async () => {
    const srv = await tokenServer();
    const missing = await post(srv.url, {});
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer/);
    await missing.body?.cancel();

    const unknown = await post(srv.url, { Authorization: `Bearer ${secretToken('unknown')}` });
    expect(unknown.status).toBe(401);
    await unknown.body?.cancel();

    const basic = await post(srv.url, { Authorization: `Basic ${alice}` });
    expect(basic.status).toBe(401);
    await basic.body?.cancel();

    const known = await post(srv.url, { Authorization: `Bearer ${alice}` });
    expect(known.status).toBe(200);
    expect(await known.json()).toMatchObject({ jsonrpc: '2.0', id: 1, result: { serverInfo: {} } });

    await expect(connectHttp(srv.url)).rejects.toThrow();
    const reasons = (await srv.waitForLogs((l) => l.event === 'http.unauthorized', 2)).map((l) => l.reason);
    expect(reasons).toEqual(expect.arrayContaining(['missing_token', 'unknown_token']));
  });

  it('keeps keys of two principals apart and hides one principal’s operations from the other', async () => {
    const srv = await tokenServer();
    const a = await client(srv.url, alice);
    const b = await client(srv.url, bob);
    const key = 'same-key-for-both';
    const byA = await callTool(a, 'create_note', {
      idempotency_key: key,
      workspace: 'shared',
      body: secretBody('a'),
    });
    const byB = await callTool(b, 'create_note', {
      idempotency_key: key,
      workspace: 'shared',
      body: secretBody('b'),
    });
    expect(byA.sc).toMatchObject({ status: 'succeeded', replayed: false });
    expect(byB.sc).toMatchObject({ status: 'succeeded', replayed: false });
    expect(byB.sc.operation_id).not.toBe(byA.sc.operation_id);
    expect(byB.sc.resource_id).not.toBe(byA.sc.resource_id);
    expect((await listNotes(a, 'shared')).map((n) => n.note_id).sort()).toEqual(
      [byA.sc.resource_id, byB.sc.resource_id].sort(),
    );

    const own = await callTool(a, 'get_operation', { operation_id: byA.sc.operation_id });
    expect(own.isError).toBe(false);
    expect(own.sc.resource_id).toBe(byA.sc.resource_id);

    const foreign = await callTool(b, 'get_operation', { operation_id: byA.sc.operation_id });
    const unknown = await callTool(b, 'get_operation', { operation_id: 'op_does_not_exist' });
    expect(foreign.isError).toBe(true);
    expect(foreign.sc.error?.code).toBe('not_found');
    expect(foreign.sc).toEqual(unknown.sc);
    expect(foreign.raw.content).toEqual(unknown.raw.content);

    const outsider = await callTool(b, 'create_note', {
      idempotency_key: 'k',
      workspace: 'alice-ws',
      body: secretBody('outsider'),
    });
    expect(outsider.sc.error?.code).toBe('forbidden');
    expect(await listNotes(a, 'alice-ws')).toEqual([]);
  });

  it('refuses the replay of an old key once the principal lost the workspace', async () => {
    const srv = await tokenServer();
    const a = await client(srv.url, alice);
    const args = { idempotency_key: 'before-revoke', workspace: 'shared', body: secretBody('revoked') };
    const created = await callTool(a, 'create_note', args);
    expect(created.sc).toMatchObject({ status: 'succeeded' });
    expect((await callTool(a, 'create_note', args)).sc.replayed).toBe(true);

    writeTokens(tokensPath, {
      [alice]: { principal: 'alice', workspaces: ['alice-ws'] },
      [bob]: { principal: 'bob', workspaces: ['shared'] },
    });
    // The server rereads the file at most once a second: poll until it denies the workspace.
    const deadline = Date.now() + 3_000;
    let denied = false;
    while (!denied && Date.now() < deadline) {
      const probe = await callTool(a, 'list_notes', { workspace: 'shared' });
      denied = probe.isError && probe.sc.error?.code === 'forbidden';
      if (!denied) await new Promise((r) => setTimeout(r, 100));
    }
    expect(denied, 'the server did not pick up the new tokens file within 3 s').toBe(true);

    const replay = await callTool(a, 'create_note', args);
    expect(replay.isError).toBe(true);
    expect(replay.sc.error?.code).toBe('forbidden');
    expect(replay.sc).not.toHaveProperty('resource_id');
    expect(JSON.stringify(replay.raw)).not.toContain(created.sc.resource_id);

    // The note is still there for a principal that holds the workspace.
    const b = await client(srv.url, bob);
    expect((await listNotes(b, 'shared')).map((n) => n.note_id)).toEqual([created.sc.resource_id]);
  });

  it('logs one idem.call line per call with ids and outcome, and never a body or a token', async () => {
    const srv = await tokenServer();
    const a = await client(srv.url, alice);
    const body = secretBody('logged');
    const args = { idempotency_key: 'log-key', workspace: 'shared', body };
    const created = await callTool(a, 'create_note', args);
    await callTool(a, 'create_note', args);
    await callTool(a, 'create_note', { ...args, body: secretBody('conflict') });
    await callTool(a, 'create_note', { ...args, body: `${secretBody('too-long')}${'x'.repeat(10_001)}` });
    const bad = await post(srv.url, { Authorization: `Bearer ${secretToken('bogus')}` });
    expect(bad.status).toBe(401);
    await bad.body?.cancel();

    // The refusal of the too-long body too: one line per call, whatever its outcome.
    const calls = await srv.waitForLogs((l) => l.event === 'idem.call', 4);
    expect(calls.map((l) => l.outcome)).toEqual([
      'executed',
      'replayed',
      'payload_conflict',
      'invalid_argument',
    ]);
    for (const line of calls) {
      expect(line).toMatchObject({
        level: 'info',
        attempt_id: expect.any(String),
        intent: calls[0]?.intent, // one action: the same digest on every call with its key
        principal: 'alice',
        workspace: 'shared',
        tool: 'create_note@v1',
        duration_ms: expect.any(Number),
      });
      expect(line.duration_ms as number).toBeGreaterThanOrEqual(0);
    }
    expect(calls[0]?.intent).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(calls[0]?.operation_id).toBe(created.sc.operation_id);
    expect(calls[1]?.operation_id).toBe(created.sc.operation_id);
    expect(new Set(calls.map((l) => l.attempt_id)).size).toBe(4);

    const stderr = srv.stderrLines().join('\n');
    expect(stderr).not.toContain(body);
    expect(stderr).not.toContain('log-key');
    expect(stderr).not.toContain(alice);
    expect(stderr).not.toContain(bob);
    assertNoSecretsLogged(stderr);
    // Every stderr line is a JSON log line.
    for (const line of srv.stderrLines().filter((l) => l !== ''))
      expect(() => JSON.parse(line)).not.toThrow();
  });
});

describe('reference server process killed mid-call', () => {
  it.each(['before_reply', 'after_commit'])(
    'replays the committed operation after a SIGKILL at %s and a restart',
    async (point) => {
      const dir = makeTempDir();
      const dbPath = join(dir, 'db.sqlite');
      const doomed = await server({ args: ['--db', dbPath], env: { IDEM_TEST_FAULTS: `${point}=kill` } });
      expect(doomed.logs().some((l) => l.event === 'idem.test_fault_armed' && l.point === point)).toBe(true);
      const c1 = await client(doomed.url);
      const args = { idempotency_key: `crash-${point}`, workspace: 'default', body: secretBody(point) };

      await expect(callTool(c1, 'create_note', args)).rejects.toThrow();
      expect(await doomed.waitForExit()).toEqual({ code: null, signal: 'SIGKILL' });

      const revived = await server({ args: ['--db', dbPath] });
      const c2 = await client(revived.url);
      const retry = await callTool(c2, 'create_note', args);
      expect(retry.isError).toBe(false);
      expect(retry.sc).toMatchObject({ status: 'succeeded', replayed: true });

      const notes = await listNotes(c2);
      expect(notes).toHaveLength(1);
      expect(notes[0]?.note_id).toBe(retry.sc.resource_id);

      const db = openSqlite(dbPath, { readonly: true });
      try {
        const rows = db.prepare('SELECT operation_id, resource_id FROM idem_operations').all();
        expect(rows).toEqual([{ operation_id: retry.sc.operation_id, resource_id: retry.sc.resource_id }]);
        const noteRows = db.prepare('SELECT note_id, operation_id FROM notes').all();
        expect(noteRows).toEqual([{ note_id: retry.sc.resource_id, operation_id: retry.sc.operation_id }]);
      } finally {
        db.close();
      }
    },
  );
});
