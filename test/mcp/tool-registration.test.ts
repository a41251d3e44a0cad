import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import { IdemError } from '../../packages/idem/src/core/errors.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { idempotentTool } from '../../packages/idem/src/mcp/idempotent-tool.js';
import { readTool } from '../../packages/idem/src/mcp/read-tool.js';
import { SDKS, type SdkSession } from '../helpers/sdk-harness.js';
import { cleanup, makeTempDir } from '../helpers/mcp-fixtures.js';

const sessions: SdkSession[] = [];
const databases: SqliteDatabase[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
  for (const db of databases.splice(0)) db.close();
  await cleanup();
});

/** A tickets application: one table, `create_ticket` (idempotent) and `list_tickets` (read). */
function ticketsApp() {
  const db = openSqlite(join(makeTempDir('idem-mcp-'), 'tickets.sqlite'));
  databases.push(db);
  db.exec('CREATE TABLE tickets (id TEXT PRIMARY KEY, workspace TEXT, title TEXT, priority TEXT)');
  const executor = new Executor({
    store: new SqliteStore(db),
    authorize: (principal, workspace) => principal === 'alice' && workspace === 'team-a',
  });
  const createTicket = idempotentTool(executor, {
    name: 'create_ticket',
    version: 1,
    description: 'Opens a ticket.',
    inputSchema: z.object({
      title: z.string().min(1).max(200).describe('What the ticket is about.'),
      priority: z.enum(['low', 'normal', 'high']).default('normal'),
    }),
    effect: (app: SqliteDatabase, args) => {
      const id = `t_${crypto.randomUUID()}`;
      app
        .prepare('INSERT INTO tickets VALUES (?, ?, ?, ?)')
        .run(id, args.workspace, args.title, args.priority);
      return { resource_id: id, ticket_id: id, priority: args.priority };
    },
  });
  const listTickets = readTool({
    name: 'list_tickets',
    description: 'Lists the tickets of a workspace.',
    // A raw shape works as well as z.object(...).
    inputSchema: { workspace: z.string() },
    outputShape: { titles: z.array(z.string()) },
    handler: async (args, principal) => {
      if (principal !== 'alice') throw new IdemError('forbidden', 'not yours');
      const rows = db.prepare('SELECT title FROM tickets WHERE workspace = ?').all(args.workspace);
      return { titles: (rows as { title: string }[]).map((r) => r.title) };
    },
  });
  const count = () => (db.prepare('SELECT count(*) AS n FROM tickets').get() as { n: number }).n;
  return { tools: [createTicket, listTickets], count };
}

describe.each(SDKS)('Idem tools on $name', (sdk) => {
  /** `null`: no authenticated principal at all. */
  async function connect(principal: string | null = 'alice') {
    const app = ticketsApp();
    const session = await sdk.connect(app.tools, principal ?? undefined);
    sessions.push(session);
    return { ...app, session };
  }

  it('lists the business fields, workspace and idempotency_key, strictly, with the retry contract', async () => {
    const { session } = await connect();
    const tools = await session.listTools();
    const create = tools.find((t) => t.name === 'create_ticket');
    expect(create?.inputSchema).toMatchObject({
      type: 'object',
      properties: {
        title: { type: 'string', minLength: 1, maxLength: 200, description: 'What the ticket is about.' },
        priority: { type: 'string', enum: ['low', 'normal', 'high'], default: 'normal' },
        workspace: { type: 'string', maxLength: 128 },
        idempotency_key: { type: 'string', maxLength: 255 },
      },
      additionalProperties: false,
    });
    expect([...((create?.inputSchema.required as string[]) ?? [])].sort()).toEqual([
      'idempotency_key',
      'title',
      'workspace',
    ]);
    expect(create?.description).toMatch(/^Opens a ticket\.\n\nRetry safety: /);
    expect(create?.annotations).toMatchObject({ idempotentHint: true, readOnlyHint: false });
    expect(create?.outputSchema).toMatchObject({
      type: 'object',
      properties: { status: { enum: expect.arrayContaining(['succeeded', 'rejected']) } },
    });
    const list = tools.find((t) => t.name === 'list_tickets');
    expect(list?.inputSchema).toMatchObject({
      properties: { workspace: { type: 'string' } },
      required: ['workspace'],
      additionalProperties: false,
    });
    expect(list?.annotations).toMatchObject({ readOnlyHint: true });
  });

  it('performs once per key and replays the original result, validated by the client', async () => {
    const { session, count } = await connect();
    const args = { idempotency_key: 'k-1', workspace: 'team-a', title: 'Parser crash' };
    const first = await session.call('create_ticket', args);
    expect(first.isError).toBe(false);
    expect(first.sc).toMatchObject({ status: 'succeeded', replayed: false, priority: 'normal' });
    expect(first.content).toEqual([{ type: 'text', text: JSON.stringify(first.sc) }]);
    const again = await session.call('create_ticket', args);
    expect(again.sc).toEqual({ ...first.sc, replayed: true });
    expect(count()).toBe(1);

    const conflict = await session.call('create_ticket', { ...args, title: 'Something else' });
    expect(conflict.isError).toBe(true);
    expect(conflict.sc).toMatchObject({ status: 'rejected', error: { code: 'payload_conflict' } });
    expect(count()).toBe(1);
    expect((await session.call('list_tickets', { workspace: 'team-a' })).sc).toMatchObject({
      titles: ['Parser crash'],
    });
  });

  it.each([
    ['a missing field', { idempotency_key: 'k', workspace: 'team-a' }, /title/],
    ['a wrong type', { idempotency_key: 'k', workspace: 'team-a', title: 42 }, /title/],
    [
      'an enum value outside the list',
      { idempotency_key: 'k', workspace: 'team-a', title: 't', priority: 'now' },
      /priority/,
    ],
    [
      'an unknown field',
      { idempotency_key: 'k', workspace: 'team-a', title: 't', tenant_id: 'x' },
      /tenant_id/,
    ],
    // JSON.parse makes `constructor` an own key; an object's prototype must not make it look known.
    [
      'an own `constructor` key',
      JSON.parse('{"idempotency_key":"k","workspace":"team-a","title":"t","constructor":{}}') as object,
      /constructor/,
    ],
    [
      'a key with a control character',
      { idempotency_key: 'a\nb', workspace: 'team-a', title: 't' },
      /idempotency_key/,
    ],
    ['no arguments at all', undefined, /title/],
  ])('answers %s with a coded invalid_argument and changes nothing', async (_, args, mentions) => {
    const { session, count } = await connect();
    const result = await session.call('create_ticket', args);
    expect(result.isError).toBe(true);
    expect(result.sc).toMatchObject({
      status: 'rejected',
      error: { code: 'invalid_argument', retryable: false },
    });
    expect(result.sc.error?.message).toMatch(mentions);
    expect(count()).toBe(0);
    const read = await session.call('list_tickets', { workspace: 'team-a', extra: 1 });
    expect(read.sc).toMatchObject({ error: { code: 'invalid_argument' } });
  });

  it('refuses a call with no authenticated principal, and a workspace the principal lacks', async () => {
    const anonymous = await connect(null);
    const args = { idempotency_key: 'k', workspace: 'team-a', title: 't' };
    expect((await anonymous.session.call('create_ticket', args)).sc).toMatchObject({
      error: { code: 'forbidden' },
    });
    expect((await anonymous.session.call('list_tickets', { workspace: 'team-a' })).sc).toMatchObject({
      error: { code: 'forbidden' },
    });
    const alice = await connect();
    expect((await alice.session.call('create_ticket', { ...args, workspace: 'team-b' })).sc).toMatchObject({
      status: 'rejected',
      error: { code: 'forbidden' },
    });
    expect(anonymous.count() + alice.count()).toBe(0);
  });
});
