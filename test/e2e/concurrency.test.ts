import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ReferenceApp } from '../../packages/idem-cli/src/server/reference-app.js';
import { TokenRegistry } from '../../packages/idem-cli/src/server/token-registry.js';
import {
  callTool,
  cleanup,
  closeQuietly,
  connectInMemory,
  listNotes,
  makeTempDir,
} from '../helpers/mcp-fixtures.js';

// In-process: the calls' lock-free lookups all happen before the first commit, so every caller but
// one must find the receipt in its re-check under the write lock.

let app: ReferenceApp;
let clients: Client[] = [];

beforeEach(() => {
  app = new ReferenceApp({
    dbPath: join(makeTempDir('idem-conc-'), 'db.sqlite'),
    registry: TokenRegistry.fixed({ principal: 'p', workspaces: ['default'] }),
  });
});

afterEach(async () => {
  await Promise.all(clients.map(closeQuietly));
  clients = [];
  await app.close();
  await cleanup();
});

async function connect(): Promise<Client> {
  const client = await connectInMemory(app, 'p');
  clients.push(client);
  return client;
}

function counts() {
  const one = (sql: string) => (app.db.prepare(sql).get() as { n: number }).n;
  return {
    notes: one('SELECT count(*) AS n FROM notes'),
    receipts: one('SELECT count(*) AS n FROM idem_operations'),
  };
}

describe('concurrent calls with one key (in-process MCP)', () => {
  it.each([
    ['8 calls on one connection', 1],
    ['8 separate connections', 8],
  ])('%s execute once and replay 7 times', async (_label, connections) => {
    const pool = await Promise.all(Array.from({ length: connections }, connect));
    const args = { idempotency_key: 'same', workspace: 'default', body: 'once' };
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => callTool(pool[i % connections] as Client, 'create_note', args)),
    );
    for (const r of results) expect(r.sc.status).toBe('succeeded');
    expect(results.filter((r) => r.sc.replayed === false)).toHaveLength(1);
    expect(new Set(results.map((r) => r.sc.operation_id)).size).toBe(1);
    expect(new Set(results.map((r) => r.sc.resource_id)).size).toBe(1);
    expect(counts()).toEqual({ notes: 1, receipts: 1 });
    expect((await listNotes(pool[0] as Client)).map((n) => n.note_id)).toEqual([results[0]?.sc.resource_id]);
  });

  it('8 calls with one key and different bodies: one executes, the others get payload_conflict', async () => {
    const client = await connect();
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        callTool(client, 'create_note', { idempotency_key: 'same', workspace: 'default', body: `body ${i}` }),
      ),
    );
    const ok = results.filter((r) => !r.isError);
    expect(ok).toHaveLength(1);
    expect(results.filter((r) => r.sc.error?.code === 'payload_conflict')).toHaveLength(7);
    expect(counts()).toEqual({ notes: 1, receipts: 1 });
  });
});
