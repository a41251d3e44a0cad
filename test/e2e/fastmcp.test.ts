import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { FastMCP } from 'fastmcp';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import { connectTarget } from '../../packages/idem/src/client/connect-target.js';
import { IdemClient } from '../../packages/idem/src/client/idem-client.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { idempotentTool } from '../../packages/idem/src/mcp/idempotent-tool.js';
import { TransportFaults } from '../../packages/idem/src/testing/transport-faults.js';
import { tempJournal } from '../helpers/client-fixtures.js';
import { cleanup, freePort, makeTempDir, type Structured } from '../helpers/mcp-fixtures.js';

/**
 * FastMCP (on SDK 1.x) with an Idem tool through the framework-neutral handler only: FastMCP's
 * own `addTool`, its own authentication, no glue beyond passing the principal and the signal.
 */
type Session = { principal: string } | undefined;
const quiet = { debug() {}, error() {}, info() {}, log() {}, warn() {} };

const open: { server?: FastMCP<Session>; db?: SqliteDatabase; clients: { close(): Promise<void> }[] } = {
  clients: [],
};
afterEach(async () => {
  for (const client of open.clients.splice(0)) await client.close().catch(() => undefined);
  await open.server?.stop();
  open.db?.close();
  await cleanup();
});

async function ticketsOnFastMcp(): Promise<{ url: string; rows: () => unknown[] }> {
  const db = (open.db = openSqlite(join(makeTempDir('idem-fastmcp-'), 'tickets.sqlite')));
  db.exec('CREATE TABLE tickets (id TEXT PRIMARY KEY, workspace TEXT, title TEXT)');
  const executor = new Executor({
    store: new SqliteStore(db),
    authorize: (principal, workspace) => principal === 'alice' && workspace === 'team-a',
  });
  const createTicket = idempotentTool(executor, {
    name: 'create_ticket',
    version: 1,
    description: 'Opens a ticket.',
    inputSchema: z.object({ title: z.string().min(1).max(200) }),
    effect: (app: SqliteDatabase, args) => {
      const id = `t_${crypto.randomUUID()}`;
      app.prepare('INSERT INTO tickets VALUES (?, ?, ?)').run(id, args.workspace, args.title);
      return { resource_id: id, ticket_id: id };
    },
  });
  const server = (open.server = new FastMCP<Session>({
    name: 'tickets',
    version: '1.0.0',
    logger: quiet,
    authenticate: async (request) =>
      request.headers.authorization === 'Bearer alice-token' ? { principal: 'alice' } : undefined,
  }));
  server.addTool({
    name: createTicket.name,
    description: createTicket.description,
    parameters: createTicket.inputSchema,
    outputSchema: createTicket.outputSchema,
    annotations: createTicket.annotations,
    execute: (args, { session, signal }) =>
      createTicket.handle(args, { principal: session?.principal, signal }),
  });
  const port = await freePort();
  await server.start({ transportType: 'httpStream', httpStream: { host: '127.0.0.1', port } });
  return { url: `http://127.0.0.1:${port}/mcp`, rows: () => db.prepare('SELECT * FROM tickets').all() };
}

async function client(url: string, token?: string): Promise<Client> {
  const c = new Client({ name: 'fastmcp-e2e', version: '0.0.0' });
  await c.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      ...(token === undefined ? {} : { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
    }),
  );
  open.clients.push(c);
  return c;
}

async function call(c: Client, args: Record<string, unknown>): Promise<{ isError: boolean; sc: Structured }> {
  const result = await c.callTool({ name: 'create_ticket', arguments: args });
  return { isError: result.isError === true, sc: result.structuredContent as Structured };
}

describe('an Idem tool on FastMCP', () => {
  it('lists its real fields and keeps the contract: replay, conflict, invalid_argument, forbidden', async () => {
    const { url, rows } = await ticketsOnFastMcp();
    const alice = await client(url, 'alice-token');
    const [tool] = (await alice.listTools()).tools;
    expect(tool?.inputSchema).toMatchObject({
      properties: { title: { type: 'string' }, workspace: {}, idempotency_key: {} },
      additionalProperties: false,
    });
    expect(tool?.description).toContain('Retry safety');

    const args = { idempotency_key: 'k-1', workspace: 'team-a', title: 'Through FastMCP' };
    const first = await call(alice, args);
    expect(first).toMatchObject({ isError: false, sc: { status: 'succeeded', replayed: false } });
    expect((await call(alice, args)).sc).toEqual({ ...first.sc, replayed: true });
    expect(await call(alice, { ...args, title: 'Other' })).toMatchObject({
      isError: true,
      sc: { error: { code: 'payload_conflict' } },
    });
    // FastMCP's own validation lets everything through; Idem answers with a code.
    expect(await call(alice, { ...args, idempotency_key: 'k-2', title: '' })).toMatchObject({
      isError: true,
      sc: { status: 'rejected', error: { code: 'invalid_argument' } },
    });
    expect((await call(alice, { ...args, tenant_id: 'x' })).sc.error?.code).toBe('invalid_argument');
    expect(await call(alice, { ...args, idempotency_key: 'k-3', workspace: 'team-b' })).toMatchObject({
      isError: true,
      sc: { error: { code: 'forbidden' } },
    });
    // FastMCP's authenticate refuses a request without a known token before any tool runs.
    await expect(client(url)).rejects.toThrow(/401|Unauthorized/);
    expect(rows()).toHaveLength(1);
  });

  it('gives idem/client one ticket for one intent when the first response is lost', async () => {
    const { url, rows } = await ticketsOnFastMcp();
    const faults = new TransportFaults().inject({ fault: 'drop_response', tool: 'create_ticket' });
    const idem = new IdemClient({
      connect: (o) => connectTarget({ url, token: 'alice-token' }, { ...o, wrap: (t) => faults.wrap(t) }),
      journal: tempJournal().journal,
      // FastMCP waits about a second for a new session's client capabilities before it answers.
      policy: { totalMs: 20_000, attemptTimeoutMs: 5_000, baseDelayMs: 20, maxDelayMs: 100 },
    });
    open.clients.push(idem);
    const outcome = await idem.call('create_ticket', { workspace: 'team-a', title: 'Lost reply' });
    expect(faults.events).toHaveLength(1);
    expect(outcome).toMatchObject({ status: 'succeeded', replayed: true });
    expect(rows()).toHaveLength(1);
  });
});
