import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildExamples, startExample } from '../helpers/example-fixtures.js';
import { callTool, cleanup, closeQuietly, connectHttp, freePort } from '../helpers/mcp-fixtures.js';
import { connectWhenReady } from '../helpers/connect-when-ready.js';
import { expectEveryRowPassed, runBuiltCheck } from '../helpers/built-check.js';
import { POSTGRES_URL, postgresAvailable } from '../helpers/postgres-fixtures.js';

// examples/mcp-handler.ts (shown verbatim in docs/your-own-tools.md): Vercel's mcp-handler served
// from Node through toNodeHandler, on PostgreSQL, behind withMcpAuth. The example runs as a user
// would run it, in its own process, in a fresh schema of the test database.
const ALICE = `alice-${randomUUID()}`; // a token granting principal alice the workspace team-a
const BOB = `bob-${randomUUID()}`; // a token granting principal bob the workspace team-b
const CAROL = `carol-${randomUUID()}`; // a token granting principal carol the workspace team-a
const TOKENS = {
  [ALICE]: { principal: 'alice', workspaces: ['team-a'] },
  [BOB]: { principal: 'bob', workspaces: ['team-b'] },
  [CAROL]: { principal: 'carol', workspaces: ['team-a'] },
};

describe.runIf(postgresAvailable)('guide example mcp-handler (Node, PostgreSQL, withMcpAuth)', () => {
  const schema = `idem_mh_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  const clients: Client[] = [];
  let url = '';
  let alice: Client;
  let bob: Client;
  let carol: Client;

  /** The tickets the example wrote, in its schema. */
  const tickets = async (where: string, values: unknown[]) =>
    (await admin.query(`SELECT id, workspace, title FROM ${schema}.tickets WHERE ${where}`, values)).rows;

  beforeAll(async () => {
    buildExamples();
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    const databaseUrl = new URL(POSTGRES_URL);
    databaseUrl.searchParams.set('options', `-c search_path=${schema}`);
    const port = await freePort();
    url = `http://127.0.0.1:${port}/mcp`;
    const server = startExample('mcp-handler', {
      DATABASE_URL: databaseUrl.toString(),
      PORT: String(port),
      TICKETS_TOKENS: JSON.stringify(TOKENS),
    });
    alice = await connectWhenReady(
      url,
      ALICE,
      'the mcp-handler example',
      () => server.proc.exitCode !== null,
      server.stderr,
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
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    await admin.end();
  });

  it('lists create_ticket with its fields and the retry contract', async () => {
    const [tool, ...others] = (await alice.listTools()).tools;
    expect(others).toEqual([]);
    expect(tool?.name).toBe('create_ticket');
    expect(Object.keys(tool?.inputSchema.properties ?? {}).sort()).toEqual([
      'idempotency_key',
      'title',
      'workspace',
    ]);
    expect(tool?.annotations?.idempotentHint).toBe(true);
  });

  it('creates one ticket, replays it for the retry, and answers payload_conflict for other arguments', async () => {
    const args = { idempotency_key: randomUUID(), workspace: 'team-a', title: 'Via mcp-handler' };
    const first = await callTool(alice, 'create_ticket', args);
    expect(first.isError).toBe(false);
    expect(first.sc).toMatchObject({ status: 'succeeded', replayed: false });
    const retry = await callTool(alice, 'create_ticket', args);
    expect(retry.sc).toEqual({ ...first.sc, replayed: true });
    const conflict = await callTool(alice, 'create_ticket', { ...args, title: 'Something else' });
    expect(conflict.isError).toBe(true);
    expect(conflict.sc.error?.code).toBe('payload_conflict');
    expect(
      await tickets('workspace = $1 AND title = ANY($2)', ['team-a', [args.title, 'Something else']]),
    ).toEqual([{ id: first.sc.resource_id, workspace: 'team-a', title: 'Via mcp-handler' }]);
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
    expect(await tickets('title = $1', [args.title])).toEqual([
      { id: [...ids][0], workspace: 'team-a', title: 'Eight at once' },
    ]);
  });

  it('refuses a field the tool does not declare with invalid_argument, and writes nothing', async () => {
    const args = { idempotency_key: randomUUID(), workspace: 'team-a', title: 'With an extra', priority: 1 };
    const refused = await callTool(alice, 'create_ticket', args);
    expect(refused.isError).toBe(true);
    expect(refused.sc.error?.code).toBe('invalid_argument');
    expect(await tickets('title = $1', [args.title])).toEqual([]);
  });

  it('keeps principals and workspaces apart: a token acts only in its grant, a key only for its principal', async () => {
    const args = { idempotency_key: randomUUID(), workspace: 'team-a', title: 'Apart' };
    const mine = await callTool(alice, 'create_ticket', args);
    expect(mine.sc).toMatchObject({ status: 'succeeded', replayed: false });
    // A workspace alice's token does not grant; bob, whose token grants team-b only, in team-a.
    const elsewhere = await callTool(alice, 'create_ticket', { ...args, workspace: 'team-b' });
    expect(elsewhere.sc.error?.code).toBe('forbidden');
    const intruder = await callTool(bob, 'create_ticket', args);
    expect(intruder.sc.error?.code).toBe('forbidden');
    // Carol, granted team-a too, with alice's key and arguments: her own ticket, never alice's result.
    const hers = await callTool(carol, 'create_ticket', args);
    expect(hers.sc).toMatchObject({ status: 'succeeded', replayed: false });
    expect(hers.sc.resource_id).not.toBe(mine.sc.resource_id);
    expect(await tickets('title = $1 ORDER BY id = $2 DESC', [args.title, mine.sc.resource_id])).toEqual([
      { id: mine.sc.resource_id, workspace: 'team-a', title: 'Apart' },
      { id: hers.sc.resource_id, workspace: 'team-a', title: 'Apart' },
    ]);
  });

  it('answers 401 with a bearer challenge to a request without a token or with an unknown one', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
    for (const authorization of [undefined, `Bearer unknown-${randomUUID()}`]) {
      const response = await fetch(url, {
        method: 'POST',
        body,
        headers: authorization === undefined ? headers : { ...headers, Authorization: authorization },
      });
      expect(response.status, String(authorization)).toBe(401);
      expect(response.headers.get('www-authenticate') ?? '').toMatch(/^Bearer /);
    }
  });
  it('passes idem check, every row, with a second principal (the last step of the guide)', async () => {
    expectEveryRowPassed(await runBuiltCheck(url, ALICE, CAROL, ['--arg', 'workspace=team-a']));
  }, 150_000);
});
