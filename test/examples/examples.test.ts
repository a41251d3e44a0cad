import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../packages/idem/src/adapters/postgres/open-postgres.js';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import { POSTGRES_URL, postgresAvailable } from '../helpers/postgres-fixtures.js';
import { buildExamples, examplePath, runExample, startExample } from '../helpers/example-fixtures.js';
import { TestIssuer } from '../helpers/test-issuer.js';
import pg from 'pg';
import {
  REPO_ROOT,
  callTool,
  cleanEnv,
  cleanup,
  closeQuietly,
  connectHttp,
  freePort,
  listNotes,
  makeTempDir,
  startServerProcess,
} from '../helpers/mcp-fixtures.js';

// Every TypeScript example in the README is a file in examples/ (test/examples/readme.test.ts
// checks that the README shows them verbatim); here each one runs against a real server.
const clients: Client[] = [];
beforeAll(buildExamples, 180_000);
afterEach(async () => {
  for (const client of clients.splice(0)) await closeQuietly(client);
  await cleanup();
});

async function referenceServer() {
  const server = await startServerProcess({ args: ['--db', join(makeTempDir(), 'notes.sqlite')] });
  const client = await connectHttp(server.url);
  clients.push(client);
  return { url: server.url, client };
}

function ticketRows(dbPath: string): { workspace: string; title: string }[] {
  const db = openSqlite(dbPath, { readonly: true });
  try {
    return db.prepare('SELECT workspace, title FROM tickets').all() as { workspace: string; title: string }[];
  } finally {
    db.close();
  }
}

describe('README examples against the reference server', () => {
  it('quickstart-client: the retry replays the first result, and there is one note', async () => {
    const { url, client } = await referenceServer();
    const lines = (await runExample('quickstart-client', { IDEM_URL: url })).trim().split('\n');
    const [first, retry] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(first).toMatchObject({ status: 'succeeded', replayed: false });
    expect(retry).toEqual({ ...first, replayed: true });
    expect((await listNotes(client)).map((n) => n.note_id)).toEqual([first?.resource_id]);
  });

  it('idem-client: prints the id of the one note it created', async () => {
    const { url, client } = await referenceServer();
    const journal = join(makeTempDir(), 'intents.sqlite');
    const noteId = (await runExample('idem-client', { IDEM_URL: url, INTENTS_DB: journal })).trim();
    expect(noteId).toMatch(/^note_/);
    expect((await listNotes(client)).map((n) => n.note_id)).toEqual([noteId]);
  });

  it('transport-faults: the lost response is recovered with the same key, one note', async () => {
    const { url, client } = await referenceServer();
    const journal = join(makeTempDir(), 'intents.sqlite');
    const out = await runExample('transport-faults', { IDEM_URL: url, INTENTS_DB: journal });
    expect(out.trim()).toBe('1 succeeded');
    expect(await listNotes(client)).toHaveLength(1);
  });
});

describe.each(['custom-tool', 'custom-tool-v1'])('README example %s (a stdio server)', (name) => {
  it('lists create_ticket with its fields and creates one ticket per key', async () => {
    const dbPath = join(makeTempDir(), 'tickets.sqlite');
    const client = new Client({ name: 'examples-test', version: '0.0.0' });
    clients.push(client);
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [examplePath(name)],
        cwd: REPO_ROOT,
        env: cleanEnv({ TICKETS_DB: dbPath }),
        stderr: 'ignore',
      }),
    );
    const [tool] = (await client.listTools()).tools;
    expect(Object.keys(tool?.inputSchema.properties ?? {}).sort()).toEqual([
      'idempotency_key',
      'title',
      'workspace',
    ]);
    const args = { idempotency_key: randomUUID(), workspace: 'team-a', title: 'From the README' };
    const first = await callTool(client, 'create_ticket', args);
    expect(first.sc).toMatchObject({ status: 'succeeded', replayed: false });
    expect((await callTool(client, 'create_ticket', args)).sc).toEqual({ ...first.sc, replayed: true });
    const elsewhere = await callTool(client, 'create_ticket', { ...args, workspace: 'team-b' });
    expect(elsewhere.sc.error?.code).toBe('forbidden');
    expect(ticketRows(dbPath)).toEqual([{ workspace: 'team-a', title: 'From the README' }]);
  });
});

describe('README example quickstart-tool (the front page: a tool of your own over stdio)', () => {
  it('lists add_todo with its fields, adds one todo per key, refuses another workspace', async () => {
    const dbPath = join(makeTempDir(), 'todos.sqlite');
    const client = new Client({ name: 'examples-test', version: '0.0.0' });
    clients.push(client);
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [examplePath('quickstart-tool')],
        cwd: REPO_ROOT,
        env: cleanEnv({ TODOS_DB: dbPath }),
        stderr: 'ignore',
      }),
    );
    const [tool] = (await client.listTools()).tools;
    expect(tool?.name).toBe('add_todo');
    expect(Object.keys(tool?.inputSchema.properties ?? {}).sort()).toEqual([
      'idempotency_key',
      'title',
      'workspace',
    ]);
    const args = { idempotency_key: randomUUID(), workspace: 'home', title: 'Buy milk' };
    const first = await callTool(client, 'add_todo', args);
    expect(first.sc).toMatchObject({ status: 'succeeded', replayed: false });
    expect((await callTool(client, 'add_todo', args)).sc).toEqual({ ...first.sc, replayed: true });
    const conflict = await callTool(client, 'add_todo', { ...args, title: 'Buy bread' });
    expect(conflict.sc.error?.code).toBe('payload_conflict');
    const elsewhere = await callTool(client, 'add_todo', { ...args, workspace: 'work' });
    expect(elsewhere.sc.error?.code).toBe('forbidden');
    const db = openSqlite(dbPath, { readonly: true });
    try {
      expect(db.prepare('SELECT id, workspace, title FROM todos').all()).toEqual([
        { id: first.sc.resource_id, workspace: 'home', title: 'Buy milk' },
      ]);
    } finally {
      db.close();
    }
  });
});

describe('README example oauth-resource-server (JWT access tokens over HTTP)', () => {
  it('acts as the token subject in the token workspaces, and challenges without a token', async () => {
    const issuer = await TestIssuer.start();
    try {
      const port = await freePort();
      const url = `http://127.0.0.1:${port}/mcp`;
      const dbPath = join(makeTempDir(), 'tickets.sqlite');
      startExample('oauth-resource-server', {
        RESOURCE_URL: url,
        ISSUER: issuer.issuer,
        JWKS_URL: issuer.jwksUrl,
        TICKETS_DB: dbPath,
      });
      const token = await issuer.sign({ sub: 'alice', workspaces: ['team-a'], scope: 'tickets' }, url);
      let client: Client | undefined;
      for (let i = 0; i < 100 && client === undefined; i += 1) {
        client = await connectHttp(url, token).catch(async () => {
          await new Promise((r) => setTimeout(r, 100));
          return undefined;
        });
      }
      if (client === undefined) throw new Error('the example did not start');
      clients.push(client);
      const args = { idempotency_key: randomUUID(), workspace: 'team-a', title: 'Over OAuth' };
      const first = await callTool(client, 'create_ticket', args);
      expect(first.sc).toMatchObject({ status: 'succeeded', replayed: false });
      expect((await callTool(client, 'create_ticket', args)).sc).toEqual({ ...first.sc, replayed: true });
      const elsewhere = await callTool(client, 'create_ticket', { ...args, workspace: 'team-b' });
      expect(elsewhere.sc.error?.code).toBe('forbidden');
      expect(ticketRows(dbPath)).toEqual([{ workspace: 'team-a', title: 'Over OAuth' }]);
      const anonymous = await fetch(url, { method: 'POST', body: '{}' });
      expect(anonymous.status).toBe(401);
      const challenge = anonymous.headers.get('www-authenticate') ?? '';
      const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1] ?? '';
      expect(await (await fetch(metadataUrl)).json()).toEqual({
        resource: url,
        authorization_servers: [issuer.issuer],
      });
      const unscoped = await issuer.sign({ sub: 'alice', workspaces: ['team-a'] }, url);
      const refused = await fetch(url, {
        method: 'POST',
        body: '{}',
        headers: { Authorization: `Bearer ${unscoped}` },
      });
      expect(refused.status).toBe(403);
    } finally {
      await issuer.close();
    }
  });
});

describe('README example fastmcp (a FastMCP server over HTTP)', () => {
  it('answers with the retry contract behind its own bearer authentication', async () => {
    const dbPath = join(makeTempDir(), 'tickets.sqlite');
    const port = await freePort();
    const token = `token-${randomUUID()}`;
    const server = startExample('fastmcp', { TICKETS_DB: dbPath, PORT: String(port), TICKETS_TOKEN: token });
    const url = new URL(`http://127.0.0.1:${port}/mcp`);
    const connect = async (bearer?: string) => {
      const client = new Client({ name: 'examples-test', version: '0.0.0' });
      clients.push(client);
      const headers = bearer === undefined ? undefined : { Authorization: `Bearer ${bearer}` };
      await client.connect(
        new StreamableHTTPClientTransport(url, headers ? { requestInit: { headers } } : {}),
      );
      return client;
    };
    let client: Client | undefined;
    for (let waited = 0; client === undefined; waited += 200) {
      client = await connect(token).catch((error: unknown) => {
        if (waited > 20_000) throw new Error(`fastmcp example not up: ${String(error)}\n${server.stderr()}`);
        return new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 200));
      });
    }
    const args = { idempotency_key: randomUUID(), workspace: 'team-a', title: 'Via FastMCP' };
    const first = await callTool(client, 'create_ticket', args);
    expect(first.sc).toMatchObject({ status: 'succeeded', replayed: false });
    expect((await callTool(client, 'create_ticket', args)).sc).toEqual({ ...first.sc, replayed: true });
    expect((await callTool(client, 'create_ticket', { ...args, title: '' })).sc.error?.code).toBe(
      'invalid_argument',
    );
    await expect(connect('wrong-token')).rejects.toThrow();
    expect(ticketRows(dbPath)).toHaveLength(1);
  });
});

describe('README example store-contract (node:test)', () => {
  it('runs every case of the contract suite against the memory store, and all pass', async () => {
    const out = await runExample('store-contract', {});
    const count = (name: string) => Number(new RegExp(`^# ${name} (\\d+)$`, 'm').exec(out)?.[1] ?? -1);
    expect(count('tests')).toBeGreaterThanOrEqual(70);
    expect(count('pass')).toBe(count('tests'));
    expect(count('fail')).toBe(0);
  });
});

describe('README examples: your own database layer without an ORM', () => {
  const expectOneInvoice = (out: string) => {
    const printed = JSON.parse(out.trim()) as {
      first: Record<string, unknown>;
      retry: Record<string, unknown>;
      conflict: unknown;
    };
    expect(printed.first).toMatchObject({ status: 'succeeded' });
    expect(printed.retry).toEqual({ ...printed.first, replayed: true });
    expect(printed.conflict).toBe('payload_conflict');
    return printed.first.resource_id as string;
  };

  it('own-sqlite-database: one invoice row, replayed, conflict on other arguments', async () => {
    const dbPath = join(makeTempDir(), 'app.sqlite');
    const id = expectOneInvoice(await runExample('own-sqlite-database', { APP_DB: dbPath }));
    const db = openSqlite(dbPath, { readonly: true });
    try {
      expect(db.prepare('SELECT id FROM invoices').all()).toEqual([{ id }]);
    } finally {
      db.close();
    }
  });

  it.skipIf(!postgresAvailable)('own-pg-pool: one invoice row in the same database, replayed', async () => {
    const schema = `example_${randomUUID().replaceAll('-', '')}`;
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA ${schema}`);
      const url = new URL(POSTGRES_URL);
      url.searchParams.set('options', `-c search_path=${schema}`);
      const id = expectOneInvoice(await runExample('own-pg-pool', { DATABASE_URL: url.toString() }));
      const { rows } = await admin.query(`SELECT id FROM ${schema}.invoices`);
      expect(rows).toEqual([{ id }]);
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    }
  });
});

describe('README example command-tools (a stdio server with named commands)', () => {
  it('runs a named command once per key and reads its output', async () => {
    const dir = makeTempDir();
    const side = join(dir, 'side.txt');
    const commandsFile = join(dir, 'commands.json');
    writeFileSync(
      commandsFile,
      JSON.stringify({
        greet: { argv: ['sh', '-c', 'echo ran >> "$SIDE"; echo hello'], timeout: '30s', env: { SIDE: side } },
      }),
    );
    const client = new Client({ name: 'examples-test', version: '0.0.0' });
    clients.push(client);
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [examplePath('command-tools')],
        cwd: REPO_ROOT,
        env: cleanEnv({ COMMANDS_DB: join(dir, 'commands.sqlite'), COMMANDS_FILE: commandsFile }),
        stderr: 'ignore',
      }),
    );
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual([
      'read_command_output',
      'run_command',
    ]);
    const args = { idempotency_key: randomUUID(), workspace: 'default', command: 'greet' };
    const accepted = await callTool(client, 'run_command', args);
    expect(accepted.sc.status).toBe('accepted');
    let read = await callTool(client, 'read_command_output', { operation_id: accepted.sc.operation_id });
    for (const deadline = Date.now() + 20_000; read.sc.finished !== true && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      read = await callTool(client, 'read_command_output', { operation_id: accepted.sc.operation_id });
    }
    expect(read.sc).toMatchObject({ finished: true, output: 'hello\n', status: 'succeeded' });
    const replay = await callTool(client, 'run_command', args);
    expect(replay.sc).toMatchObject({
      status: 'succeeded',
      replayed: true,
      exit_code: 0,
      last_lines: ['hello'],
    });
    expect(readFileSync(side, 'utf8')).toBe('ran\n');
  });
});

describe.each(['kysely-store', 'drizzle-store'])(
  'README example %s (the effect in the ORM transaction, SQLite)',
  (name) => {
    it('creates one ticket, replays it for the retry, and keeps its receipt beside it', async () => {
      const dbPath = join(makeTempDir(), 'tickets.sqlite');
      const first = expectTicketThenReplay(await runExample(name, { TICKETS_DB: dbPath }));
      const db = openSqlite(dbPath, { readonly: true });
      try {
        expect(db.prepare('SELECT id FROM tickets').all()).toEqual([{ id: first?.ticket_id }]);
        expect(db.prepare('SELECT resource_id FROM idem_operations').all()).toEqual([
          { resource_id: first?.ticket_id },
        ]);
      } finally {
        db.close();
      }
    });
  },
);

/** A ticket example's two printed lines: a first execution, then its replay; returns the first. */
function expectTicketThenReplay(output: string): Record<string, unknown> {
  const [first, retry] = output
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(first).toMatchObject({
    status: 'succeeded',
    replayed: false,
    ticket_id: expect.stringMatching(/^t_/),
  });
  expect(retry).toEqual({ ...first, replayed: true });
  return first as Record<string, unknown>;
}

describe.runIf(postgresAvailable)('README example prisma-store (PostgreSQL)', () => {
  it('creates one ticket, replays it for the retry, and keeps its receipt beside it', async () => {
    const schema = `idem_ex_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
    const pool = await openPostgres(POSTGRES_URL, { schema });
    try {
      const first = expectTicketThenReplay(
        await runExample('prisma-store', { DATABASE_URL: POSTGRES_URL, DATABASE_SCHEMA: schema }),
      );
      expect((await pool.query('SELECT id FROM tickets')).rows).toEqual([{ id: first?.ticket_id }]);
      expect((await pool.query('SELECT resource_id FROM idem_operations')).rows).toEqual([
        { resource_id: first?.ticket_id },
      ]);
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
      await pool.end();
    }
  });
});
