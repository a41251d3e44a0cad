import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import { connectTarget } from '../../packages/idem/src/client/connect-target.js';
import { IdemClient } from '../../packages/idem/src/client/idem-client.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { principalAuthInfo } from '../../packages/idem/src/mcp/attach-auth-info.js';
import { registerIdempotentTool } from '../../packages/idem/src/mcp/v1/register-tool-v1.js';
import { TransportFaults } from '../../packages/idem/src/testing/transport-faults.js';
import { tempJournal } from '../helpers/client-fixtures.js';
import { cleanup, makeTempDir } from '../helpers/mcp-fixtures.js';

/**
 * The direction "v2 client, 1.x server": `idem/client` (SDK v2) against a server on SDK 1.x whose
 * tool is registered with `idem/mcp-v1`, over real Streamable HTTP on loopback.
 */
const open: { http?: Server; db?: SqliteDatabase; idem?: IdemClient } = {};
afterEach(async () => {
  await open.idem?.close();
  await new Promise<void>((resolve) => (open.http ? open.http.close(() => resolve()) : resolve()));
  open.http?.closeAllConnections();
  open.db?.close();
  await cleanup();
});

async function v1Server(): Promise<{ url: string; rows: () => string[] }> {
  const db = (open.db = openSqlite(join(makeTempDir('idem-v1-server-'), 'tickets.sqlite')));
  db.exec('CREATE TABLE tickets (id TEXT PRIMARY KEY, title TEXT)');
  const executor = new Executor({ store: new SqliteStore(db), authorize: () => true });
  const mcpServer = () => {
    const server = new McpServer({ name: 'tickets-v1', version: '1.0.0' });
    registerIdempotentTool(server, executor, {
      name: 'create_ticket',
      version: 1,
      description: 'Opens a ticket.',
      inputSchema: z.object({ title: z.string().min(1) }),
      effect: (app: SqliteDatabase, args) => {
        const id = `t_${crypto.randomUUID()}`;
        app.prepare('INSERT INTO tickets VALUES (?, ?)').run(id, args.title);
        return { resource_id: id };
      },
    });
    return server;
  };
  const http = (open.http = createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { Allow: 'POST' }).end(); // stateless: no GET stream, no DELETE
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const server = mcpServer();
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      void server
        .connect(transport)
        .then(() =>
          transport.handleRequest(
            Object.assign(req, { auth: principalAuthInfo('alice') }),
            res,
            JSON.parse(Buffer.concat(chunks).toString('utf8')),
          ),
        );
    });
  }));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  const rows = () => (db.prepare('SELECT id FROM tickets').all() as { id: string }[]).map((r) => r.id);
  return { url: `http://127.0.0.1:${port}/mcp`, rows };
}

describe('idem/client (SDK v2) against an SDK 1.x server using idem/mcp-v1', () => {
  it('one ticket for one intent although the first response was lost; a conflict is a failure', async () => {
    const { url, rows } = await v1Server();
    const faults = new TransportFaults().inject({ fault: 'drop_response', tool: 'create_ticket' });
    const idem = (open.idem = new IdemClient({
      connect: (o) => connectTarget({ url }, { ...o, wrap: (t) => faults.wrap(t) }),
      journal: tempJournal().journal,
      newKey: () => 'one-key', // so that the second intent below reuses it with other arguments
      policy: { totalMs: 10_000, attemptTimeoutMs: 1_000, baseDelayMs: 20, maxDelayMs: 100 },
    }));
    const outcome = await idem.call('create_ticket', { workspace: 'w', title: 'Lost reply' });
    expect(faults.events.map((e) => e.fault)).toEqual(['drop_response']);
    if (outcome.status !== 'succeeded') throw new Error(JSON.stringify(outcome));
    expect(outcome.replayed).toBe(true);
    expect(rows()).toEqual([outcome.result.resource_id]);

    const reused = await idem.call('create_ticket', { workspace: 'w', title: 'Other' });
    expect(reused).toMatchObject({ status: 'failed', error: { code: 'payload_conflict' } });
    expect(rows()).toHaveLength(1);
  });
});
