import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { SdkError } from '@modelcontextprotocol/client';
import { Client, SdkErrorCode, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CLI,
  REPO_ROOT,
  callTool,
  cleanEnv,
  cleanup,
  closeQuietly,
  dropFirstResponse,
  ensureBuilt,
  makeTempDir,
  startServerProcess,
} from '../helpers/mcp-fixtures.js';
import { adminPool, dropSchema, freshSchema } from '../helpers/multi-fixtures.js';
import { POSTGRES_URL, postgresAvailable } from '../helpers/postgres-fixtures.js';

// `idem serve` speaks the 2026-07-28 revision and the 2025 ones from one endpoint: a client pinned to
// the new revision executes, replays and gets payload_conflict; a 2025 client on the same server
// sees the same receipts (nothing keys on the era or on JSON-RPC ids).

beforeAll(() => ensureBuilt());
afterAll(cleanup);

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await closeQuietly(client);
});

async function connect(url: string, mode: 'legacy' | 'auto' | { pin: string }): Promise<Client> {
  const client = new Client({ name: 'idem-e2e-2026', version: '0.0.0' }, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  clients.push(client);
  await client.listTools();
  return client;
}

async function rawPost(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
};

describe('idem serve on the 2026-07-28 revision', () => {
  it('a pinned client executes, replays and gets payload_conflict; a 2025 client replays the same key', async () => {
    const srv = await startServerProcess({ args: ['--db', join(makeTempDir(), 'db.sqlite')] });
    const modern = await connect(srv.url, { pin: '2026-07-28' });
    expect(modern.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const key = `k-${randomUUID()}`;
    const args = { workspace: 'default', body: 'hello 2026', idempotency_key: key };
    const first = await callTool(modern, 'create_note', args);
    expect(first.isError).toBe(false);
    expect(first.sc.replayed).toBe(false);
    const again = await callTool(modern, 'create_note', args);
    expect(again.sc.replayed).toBe(true);
    expect(again.sc.note_id).toBe(first.sc.note_id);
    const conflict = await callTool(modern, 'create_note', { ...args, body: 'other' });
    expect(conflict.isError).toBe(true);
    expect(conflict.sc.error?.code).toBe('payload_conflict');

    const legacy = await connect(srv.url, 'legacy');
    const replayed = await callTool(legacy, 'create_note', args);
    expect(replayed.sc.replayed).toBe(true);
    expect(replayed.sc.note_id).toBe(first.sc.note_id);
    expect(legacy.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    const auto = await connect(srv.url, 'auto');
    expect(auto.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    expect((await callTool(auto, 'create_note', args)).sc.note_id).toBe(first.sc.note_id);
  });

  it('answers server/discover, refuses a bad envelope with the request id, and a 2025 initialize still works', async () => {
    const srv = await startServerProcess({ args: ['--db', join(makeTempDir(), 'db.sqlite')] });
    const discover = await rawPost(
      srv.url,
      { jsonrpc: '2.0', id: 7, method: 'server/discover', params: { _meta: META } },
      { 'Mcp-Method': 'server/discover', 'MCP-Protocol-Version': '2026-07-28' },
    );
    expect(discover.status).toBe(200);
    const result = discover.body.result as { supportedVersions?: string[]; resultType?: string };
    // Only modern revisions are listed there (the 2025 ones are negotiated by initialize, below).
    expect(result.supportedVersions).toEqual(['2026-07-28']);

    const missing = await rawPost(
      srv.url,
      {
        jsonrpc: '2.0',
        id: 'abc',
        method: 'server/discover',
        params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } },
      },
      { 'Mcp-Method': 'server/discover', 'MCP-Protocol-Version': '2026-07-28' },
    );
    expect(missing.status).toBe(400);
    expect(missing.body.id).toBe('abc');
    expect((missing.body.error as { code: number }).code).toBe(-32602);

    const init = await rawPost(srv.url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'old', version: '0' } },
    });
    expect(init.status).toBe(200);
    expect((init.body.result as { protocolVersion: string }).protocolVersion).toBe('2025-11-25');
  });

  it('Mcp-Name disagreeing with the body is refused -32020 (HTTP 400, nothing done); results, replays and refusals carry resultType', async () => {
    const srv = await startServerProcess({ args: ['--db', join(makeTempDir(), 'db.sqlite')] });
    const key = `k-${randomUUID()}`;
    const call = {
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: {
        name: 'create_note',
        arguments: { workspace: 'default', body: 'x', idempotency_key: key },
        _meta: META,
      },
    };
    const refused = await rawPost(srv.url, call, {
      'Mcp-Method': 'tools/call',
      'Mcp-Name': 'list_notes',
      'MCP-Protocol-Version': '2026-07-28',
    });
    expect(refused.status).toBe(400);
    expect((refused.body.error as { code: number }).code).toBe(-32020);
    expect(refused.body.id).toBe(3);
    const done = await rawPost(srv.url, call, {
      'Mcp-Method': 'tools/call',
      'Mcp-Name': 'create_note',
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Param-Idempotency-Key': key,
    });
    expect(done.status).toBe(200);
    type Wire = { resultType?: string; structuredContent: { replayed: boolean } };
    const result = done.body.result as Wire;
    expect(result.structuredContent.replayed).toBe(false);
    expect(result.resultType).toBe('complete');
    // A replay is a complete result too, on the wire.
    const replay = await rawPost(
      srv.url,
      { ...call, id: 4 },
      {
        'Mcp-Method': 'tools/call',
        'Mcp-Name': 'create_note',
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Param-Idempotency-Key': key,
      },
    );
    expect((replay.body.result as Wire).structuredContent.replayed).toBe(true);
    expect((replay.body.result as Wire).resultType).toBe('complete');
    // Idem's own refusal of a `__proto__` key, answered before the SDK, is a complete result too.
    const poisoned = JSON.parse(
      `{"workspace":"default","body":"x","idempotency_key":"${key}","__proto__":{"a":1}}`,
    ) as Record<string, unknown>;
    const refusedKey = await rawPost(
      srv.url,
      { ...call, id: 5, params: { ...call.params, arguments: poisoned } },
      {
        'Mcp-Method': 'tools/call',
        'Mcp-Name': 'create_note',
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Param-Idempotency-Key': key,
      },
    );
    type Refusal = { resultType?: string; isError?: boolean; structuredContent: { error: { code: string } } };
    expect(refusedKey.body.id).toBe(5);
    expect((refusedKey.body.result as Refusal).isError).toBe(true);
    expect((refusedKey.body.result as Refusal).structuredContent.error.code).toBe('invalid_argument');
    expect((refusedKey.body.result as Refusal).resultType).toBe('complete');
    expect(replay.body.id).toBe(4);
  });

  it('the key travels as Mcp-Param-Idempotency-Key: marked in the listing, equal works, missing or disagreeing is -32020 (HTTP 400, nothing done), 2025 unaffected', async () => {
    const srv = await startServerProcess({ args: ['--db', join(makeTempDir(), 'db.sqlite')] });
    const listed = await rawPost(
      srv.url,
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } },
      { 'Mcp-Method': 'tools/list', 'MCP-Protocol-Version': '2026-07-28' },
    );
    type Listed = {
      tools: { name: string; inputSchema: { properties: Record<string, Record<string, unknown>> } }[];
    };
    const createNote = (listed.body.result as Listed).tools.find((tool) => tool.name === 'create_note');
    expect(createNote?.inputSchema.properties.idempotency_key?.['x-mcp-header']).toBe('Idempotency-Key');

    const key = `h-${randomUUID()}`;
    const call = (id: number, headers: Record<string, string>) =>
      rawPost(
        srv.url,
        {
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: {
            name: 'create_note',
            arguments: { workspace: 'default', body: 'keyed header', idempotency_key: key },
            _meta: META,
          },
        },
        {
          'Mcp-Method': 'tools/call',
          'Mcp-Name': 'create_note',
          'MCP-Protocol-Version': '2026-07-28',
          ...headers,
        },
      );
    const other = await call(1, { 'Mcp-Param-Idempotency-Key': `${key}-other` });
    expect(other.status).toBe(400);
    expect(other.body.id).toBe(1);
    expect((other.body.error as { code: number }).code).toBe(-32020);
    const missing = await call(2, {});
    expect(missing.status).toBe(400);
    expect((missing.body.error as { code: number }).code).toBe(-32020);
    // Neither refusal used the key: the first call with the right header executes.
    const done = await call(3, { 'Mcp-Param-Idempotency-Key': key });
    expect(done.status).toBe(200);
    expect(
      (done.body.result as { structuredContent: { replayed: boolean } }).structuredContent.replayed,
    ).toBe(false);

    // An SDK client pinned to 2026-07-28 mirrors the key itself (after listing, or on its own
    // recovery from -32020 when it calls first): it replays. A 2025 client sends no such header.
    const pinned = new Client(
      { name: 'idem-e2e-header', version: '0.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await pinned.connect(new StreamableHTTPClientTransport(new URL(srv.url)));
    clients.push(pinned);
    const args = { workspace: 'default', body: 'keyed header', idempotency_key: key };
    expect((await callTool(pinned, 'create_note', args)).sc.replayed).toBe(true);
    const legacy = await connect(srv.url, 'legacy');
    expect((await callTool(legacy, 'create_note', args)).sc.replayed).toBe(true);
    const legacyRaw = await rawPost(
      srv.url,
      {
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/call',
        params: { name: 'create_note', arguments: args },
      },
      { 'MCP-Protocol-Version': '2025-11-25' },
    );
    expect(legacyRaw.status).toBe(200);
    expect(
      (legacyRaw.body.result as { structuredContent: { replayed: boolean } }).structuredContent.replayed,
    ).toBe(true);
  });

  it('idem serve --stdio: a pinned client and a 2025 client of the same database share receipts', async () => {
    const db = join(makeTempDir(), 'db.sqlite');
    const stdio = async (mode: 'legacy' | { pin: string }) => {
      const client = new Client(
        { name: 'idem-e2e-stdio', version: '0.0.0' },
        { versionNegotiation: { mode } },
      );
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [CLI, 'serve', '--stdio', '--db', db],
        cwd: REPO_ROOT,
        env: cleanEnv(),
        stderr: 'ignore',
      });
      await client.connect(transport);
      clients.push(client);
      return client;
    };
    const modern = await stdio({ pin: '2026-07-28' });
    expect(modern.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const args = { workspace: 'default', body: 'over stdio', idempotency_key: `s-${randomUUID()}` };
    const first = await callTool(modern, 'create_note', args);
    expect(first.sc).toMatchObject({ status: 'succeeded', replayed: false });
    expect((await callTool(modern, 'create_note', args)).sc.replayed).toBe(true);
    await closeQuietly(modern);
    const legacy = await stdio('legacy');
    expect(legacy.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    const again = await callTool(legacy, 'create_note', args);
    expect(again.sc).toMatchObject({ replayed: true, note_id: first.sc.note_id });
  });
});

const BACKENDS = [
  { name: 'sqlite', db: () => ['--db', join(makeTempDir(), 'db.sqlite')] },
  ...(postgresAvailable
    ? [
        {
          name: 'postgres',
          db: () => {
            const schema = freshSchema();
            schemas.push(schema);
            return ['--db', POSTGRES_URL, '--db-schema', schema];
          },
        },
      ]
    : []),
];
const schemas: string[] = [];
afterAll(async () => {
  if (schemas.length === 0) return;
  const pool = adminPool('protocol-2026');
  for (const schema of schemas) await dropSchema(pool, schema);
  await pool.end();
});

describe.each(BACKENDS)(
  'a response lost with its stream, re-issued with a new JSON-RPC id ($name)',
  (backend) => {
    it.each([{ pin: '2026-07-28' }, 'legacy'] as const)(
      'era %j: the retry replays the committed result',
      async (mode) => {
        const srv = await startServerProcess({ args: backend.db() });
        const transport = new StreamableHTTPClientTransport(new URL(srv.url));
        const dropping = dropFirstResponse(transport);
        const client = new Client(
          { name: 'idem-e2e-lost', version: '0.0.0' },
          { versionNegotiation: { mode } },
        );
        await client.connect(dropping);
        clients.push(client);
        await client.listTools();
        const args = { workspace: 'default', body: 'lost once', idempotency_key: `l-${randomUUID()}` };
        const lost = await callTool(client, 'create_note', args, { timeout: 1000 }).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect((lost as SdkError).code).toBe(SdkErrorCode.RequestTimeout);
        const original = dropping.droppedResult();
        expect(original?.replayed).toBe(false);
        // The SDK client gives every request a new JSON-RPC id; the key alone makes it a retry.
        const retry = await callTool(client, 'create_note', args);
        expect(retry.sc).toMatchObject({ replayed: true, note_id: original?.note_id });
        const calls = await srv.waitForLogs(
          (line) => line.event === 'idem.call' && line.tool === 'create_note@v1',
          2,
        );
        expect(calls.map((line) => line.outcome)).toEqual(['executed', 'replayed']);
      },
    );
  },
);
