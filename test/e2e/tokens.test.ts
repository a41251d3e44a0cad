import { randomUUID } from 'node:crypto';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CLI,
  REPO_ROOT,
  callTool,
  cleanEnv,
  cleanup,
  closeQuietly,
  connectHttp,
  ensureBuilt,
  makeTempDir,
  startServerProcess,
  type LogLine,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';

// The tokens file through the real server: per-token grants, and reloads that fail closed.

const secrets: string[] = [];
let servers: ServerProcess[] = [];
let clients: Client[] = [];

function secretToken(label: string): string {
  const token = `tok-${label}-${randomUUID()}`;
  secrets.push(token);
  return token;
}

beforeAll(() => ensureBuilt());

afterEach(async () => {
  try {
    for (const s of servers) {
      const stderr = s.stderrLines().join('\n');
      for (const secret of secrets)
        expect(stderr, `stderr leaked ${secret.slice(0, 12)}…`).not.toContain(secret);
    }
  } finally {
    await Promise.all(clients.map(closeQuietly));
    clients = [];
    servers = [];
    await cleanup();
  }
});

afterAll(cleanup);

type Grants = Record<string, { principal: string; workspaces: string[] }>;

interface TokenServer {
  srv: ServerProcess;
  tokensPath: string;
  wide: string;
  narrow: string;
  bob: string;
  grants: Grants;
}

/** A server whose tokens file gives alice two tokens (one limited to `shared`) and bob one. */
async function tokenServer(): Promise<TokenServer> {
  const dir = makeTempDir();
  const tokensPath = join(dir, 'tokens.json');
  const wide = secretToken('wide');
  const narrow = secretToken('narrow');
  const bob = secretToken('bob');
  const grants: Grants = {
    [wide]: { principal: 'alice', workspaces: ['shared', 'alice-ws'] },
    [narrow]: { principal: 'alice', workspaces: ['shared'] },
    [bob]: { principal: 'bob', workspaces: ['shared'] },
  };
  writeFileSync(tokensPath, JSON.stringify(grants));
  const srv = await startServerProcess({ args: ['--db', join(dir, 'db.sqlite'), '--tokens', tokensPath] });
  servers.push(srv);
  return { srv, tokensPath, wide, narrow, bob, grants };
}

async function client(url: string, token: string): Promise<Client> {
  const connected = await connectHttp(url, token);
  clients.push(connected);
  return connected;
}

/** The HTTP status of an MCP initialize sent with `token`. */
async function statusWith(url: string, token: string): Promise<number> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      Authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'fetch', version: '0' },
      },
    }),
  });
  await response.body?.cancel();
  return response.status;
}

/** Polls `check` (the server rereads the file at most once a second) for up to 3 s. */
async function eventually(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 3_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within 3 s: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const events = (srv: ServerProcess, event: string): LogLine[] => srv.logs().filter((l) => l.event === event);

describe('tokens file over HTTP: grants per token', () => {
  it('bounds each token by its own workspaces, even when another token of its principal holds more', async () => {
    const { srv, wide, narrow } = await tokenServer();
    const byWide = await client(srv.url, wide);
    const byNarrow = await client(srv.url, narrow);
    const args = { idempotency_key: 'k-private', workspace: 'alice-ws', body: 'in alice-ws' };

    const created = await callTool(byWide, 'create_note', args);
    expect(created.sc).toMatchObject({ status: 'succeeded', replayed: false });

    // Same principal, same key: the narrow token may neither run it nor read its receipt back.
    const replay = await callTool(byNarrow, 'create_note', args);
    expect(replay.sc.error?.code).toBe('forbidden');
    expect(JSON.stringify(replay.raw)).not.toContain(created.sc.resource_id);
    const fresh = await callTool(byNarrow, 'create_note', { ...args, idempotency_key: 'k-other' });
    expect(fresh.sc.error?.code).toBe('forbidden');
    expect((await callTool(byNarrow, 'list_notes', { workspace: 'alice-ws' })).sc.error?.code).toBe(
      'forbidden',
    );
    const note = await callTool(byNarrow, 'get_note', {
      workspace: 'alice-ws',
      note_id: created.sc.resource_id,
    });
    expect(note.sc.error?.code).toBe('forbidden');
    const op = await callTool(byNarrow, 'get_operation', { operation_id: created.sc.operation_id });
    expect(op.isError).toBe(true);
    expect(JSON.stringify(op.raw)).not.toContain(created.sc.resource_id);

    // In the workspace it does hold, the narrow token works; the wide one still has both.
    const shared = await callTool(byNarrow, 'create_note', { ...args, workspace: 'shared' });
    expect(shared.sc).toMatchObject({ status: 'succeeded', replayed: false });
    const listed = await callTool(byWide, 'list_notes', { workspace: 'alice-ws' });
    expect((listed.sc.notes as { note_id: string }[]).map((n) => n.note_id)).toEqual([
      created.sc.resource_id,
    ]);
  });
});

describe('tokens file over HTTP: a reload that fails', () => {
  it.each([
    [
      'a trailing comma',
      (g: Grants) => `${JSON.stringify(g).slice(0, -1)},}`,
      /not JSON \(line 1, column \d+\)/,
    ],
    [
      'a misspelt field',
      (g: Grants) =>
        JSON.stringify({ ...g, [secretToken('typo')]: { principal: 'carol', workspace: ['x'] } }),
      /entry 4: unknown field "workspace"/,
    ],
    [
      'a short token',
      (g: Grants) => JSON.stringify({ ...g, 'short-token-15c': { principal: 'carol', workspaces: [] } }),
      /entry 4: the token is shorter than 16 characters/,
    ],
    [
      // bob's token listed again with alice's grant: JSON.parse would keep the last, bob became alice.
      "bob's token listed again for alice",
      (g: Grants) => {
        const bob = Object.keys(g)[2] as string;
        return `${JSON.stringify(g).slice(0, -1)},"${bob}":{"principal":"alice","workspaces":["alice-ws"]}}`;
      },
      /entry 4 lists the token of entry 3 again \(line 1, column \d+\)/,
    ],
    [
      'a principal with a lone surrogate',
      (g: Grants) =>
        JSON.stringify({
          ...g,
          [secretToken('mallory')]: { principal: 'mallory\ud800', workspaces: ['shared'] },
        }),
      /entry 4: principal: must be well-formed Unicode/,
    ],
  ])(
    'with %s is logged at once and refuses every token until the file is valid again',
    async (_l, broken, reason) => {
      const { srv, tokensPath, wide, bob, grants } = await tokenServer();
      expect(await statusWith(srv.url, wide)).toBe(200);
      const connected = await client(srv.url, bob);

      writeFileSync(tokensPath, broken(grants));
      // Reported when it happens, before any request tries a token.
      await eventually(
        'tokens.reload_failed is logged',
        async () => events(srv, 'tokens.reload_failed').length > 0,
      );
      await eventually(
        'the broken file refuses alice',
        async () => (await statusWith(srv.url, wide)) === 401,
      );
      expect(await statusWith(srv.url, bob)).toBe(401);
      await expect(callTool(connected, 'list_notes', { workspace: 'shared' })).rejects.toThrow();

      const failed = events(srv, 'tokens.reload_failed');
      expect(failed).toHaveLength(1);
      expect(failed[0]).toMatchObject({ level: 'error', file: tokensPath });
      expect(String(failed[0]?.reason)).toMatch(reason);
      expect(String(failed[0]?.reason)).toContain(`tokens file ${tokensPath} is invalid`);

      writeFileSync(tokensPath, JSON.stringify(grants));
      await eventually(
        'the valid file accepts alice again',
        async () => (await statusWith(srv.url, wide)) === 200,
      );
      await srv.waitForLogs((l) => l.event === 'tokens.reloaded', 1);
      expect(events(srv, 'tokens.reloaded')).toEqual([
        expect.objectContaining({ level: 'info', file: tokensPath, tokens: 3 }),
      ]);
      const again = await client(srv.url, bob);
      expect((await callTool(again, 'list_notes', { workspace: 'shared' })).isError).toBe(false);
      expect(events(srv, 'tokens.reload_failed')).toHaveLength(1);
    },
  );

  it('revokes every token when the file is deleted, and logs it', async () => {
    const { srv, tokensPath, wide, narrow, bob, grants } = await tokenServer();
    expect(await statusWith(srv.url, narrow)).toBe(200);
    rmSync(tokensPath);
    await eventually('the deletion is logged', async () => events(srv, 'tokens.reload_failed').length > 0);
    await eventually(
      'the deleted file refuses alice',
      async () => (await statusWith(srv.url, narrow)) === 401,
    );
    expect(await statusWith(srv.url, wide)).toBe(401);
    expect(await statusWith(srv.url, bob)).toBe(401);
    expect(events(srv, 'tokens.reload_failed')).toEqual([
      expect.objectContaining({
        level: 'error',
        file: tokensPath,
        reason: expect.stringMatching(/does not exist/),
      }),
    ]);

    writeFileSync(`${tokensPath}.tmp`, JSON.stringify(grants));
    renameSync(`${tokensPath}.tmp`, tokensPath);
    await eventually('the file put back accepts bob', async () => (await statusWith(srv.url, bob)) === 200);
  });
});

describe('tokens file over stdio', () => {
  it('checks $IDEM_TOKEN again for every call, so a broken or revoking file refuses it', async () => {
    const dir = makeTempDir();
    const tokensPath = join(dir, 'tokens.json');
    const token = secretToken('stdio');
    const grants: Grants = { [token]: { principal: 'carol', workspaces: ['default'] } };
    writeFileSync(tokensPath, JSON.stringify(grants));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'serve', '--stdio', '--db', join(dir, 'db.sqlite'), '--tokens', tokensPath],
      cwd: REPO_ROOT,
      env: cleanEnv({ IDEM_TOKEN: token }),
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer | string) => (stderr += chunk.toString()));
    const c = new Client({ name: 'idem-e2e-tokens', version: '0.0.0' });
    clients.push(c);
    await c.connect(transport);
    await c.listTools();
    const listed = async () => (await callTool(c, 'list_notes', { workspace: 'default' })).sc.error?.code;
    expect(await listed()).toBeUndefined();

    writeFileSync(tokensPath, JSON.stringify(grants).replace('"principal"', '"principle"'));
    await eventually(
      'stdio refuses the token of a broken file',
      async () => (await listed()) === 'forbidden',
    );
    expect(stderr).toContain('"event":"tokens.reload_failed"');

    writeFileSync(tokensPath, JSON.stringify({ [token]: { principal: 'carol', workspaces: ['other'] } }));
    await eventually('stdio acts in the new workspace', async () => {
      const other = await callTool(c, 'list_notes', { workspace: 'other' });
      return !other.isError;
    });
    expect(await listed()).toBe('forbidden');
    expect(stderr).not.toContain(token);
  });
});
