import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import { silentLogger } from '../../packages/idem/src/core/logger.js';
import type { FingerprintSelection } from '../../packages/idem/src/core/fingerprint-selection.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { durableTool, idempotentTool } from '../../packages/idem/src/mcp/idempotent-tool.js';
import { SDKS, type SdkSession } from '../helpers/sdk-harness.js';
import { cleanup, makeTempDir } from '../helpers/mcp-fixtures.js';

const sessions: SdkSession[] = [];
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
  // The store, not only its database: it has a checkpoint thread with a connection of its own,
  // which would write the WAL beside a directory being removed.
  for (const store of stores.splice(0)) await store.close();
  await cleanup();
});

const ticketInput = z.object({
  title: z.string().min(1),
  priority: z.enum(['low', 'normal', 'high']).default('normal'),
  note: z.string().optional().describe('Free text for the team.'),
});

function ticketsApp(fingerprint?: FingerprintSelection) {
  const db = openSqlite(join(makeTempDir('idem-fp-'), 'tickets.sqlite'));
  db.exec('CREATE TABLE tickets (id TEXT PRIMARY KEY, workspace TEXT, title TEXT, note TEXT)');
  const store = new SqliteStore(db);
  stores.push(store);
  const executor = new Executor({ store, logger: silentLogger, authorize: () => true });
  const tool = idempotentTool(executor, {
    name: 'create_ticket',
    version: 1,
    description: 'Opens a ticket.',
    inputSchema: ticketInput,
    ...(fingerprint === undefined ? {} : { fingerprint }),
    effect: (app: SqliteDatabase, args) => {
      const id = `t_${crypto.randomUUID()}`;
      app
        .prepare('INSERT INTO tickets VALUES (?, ?, ?, ?)')
        .run(id, args.workspace, args.title, args.note ?? null);
      return { resource_id: id, note: args.note ?? null };
    },
  });
  const count = () => (db.prepare('SELECT count(*) AS n FROM tickets').get() as { n: number }).n;
  return { executor, tool, count };
}

describe.each(SDKS)('fingerprint selection on $name', (sdk) => {
  async function connect(fingerprint?: FingerprintSelection) {
    const app = ticketsApp(fingerprint);
    const session = await sdk.connect([app.tool], 'alice');
    sessions.push(session);
    return { ...app, session };
  }

  const args = (note: string, title = 'Printer on fire') => ({
    idempotency_key: 'key-1',
    workspace: 'team-a',
    title,
    note,
  });

  it('replays a retry that rephrases an excluded field (replayed: true, one ticket, the first note)', async () => {
    const { session, count } = await connect({ exclude: ['note'] });
    const first = await session.call('create_ticket', args('The printer on floor 2 is on fire.'));
    const retry = await session.call('create_ticket', args('Floor 2 printer is burning.'));
    expect(first.isError).toBe(false);
    expect(retry.isError).toBe(false);
    expect(retry.sc).toMatchObject({
      status: 'succeeded',
      replayed: true,
      operation_id: first.sc.operation_id,
      note: 'The printer on floor 2 is on fire.',
    });
    expect(count()).toBe(1);
  });

  it('refuses a changed covered field as payload_conflict', async () => {
    const { session, count } = await connect({ exclude: ['note'] });
    await session.call('create_ticket', args('a'));
    const changed = await session.call('create_ticket', args('a', 'Printer fixed'));
    expect(changed.isError).toBe(true);
    expect(changed.sc.error?.code).toBe('payload_conflict');
    expect(count()).toBe(1);
  });

  it('keeps covering every argument without a selection', async () => {
    const { session, count } = await connect();
    await session.call('create_ticket', args('a'));
    const rephrased = await session.call('create_ticket', args('b'));
    expect(rephrased.sc.error?.code).toBe('payload_conflict');
    expect(count()).toBe(1);
  });

  it('tells the caller which fields a retry must repeat exactly', async () => {
    const { session } = await connect({ exclude: ['note'] });
    const [listed] = await session.listTools();
    expect(listed?.description).toContain(
      'On a retry, repeat workspace, title and priority exactly; note may be worded differently, but a retry never applies such a change: it returns the original result.',
    );
    expect(listed?.description).toContain(
      'a used key with a different workspace, title or priority is rejected as payload_conflict',
    );
  });
});

describe('fingerprint selection at registration', () => {
  function register(fingerprint: unknown, durable = false) {
    const { executor } = ticketsApp();
    const base = {
      name: 'create_ticket',
      version: 1,
      description: 'Opens a ticket.',
      inputSchema: ticketInput,
      fingerprint: fingerprint as FingerprintSelection,
    };
    return durable
      ? durableTool(executor, base)
      : idempotentTool(executor, { ...base, effect: () => ({ resource_id: 'r' }) });
  }

  function refusal(fingerprint: unknown, durable = false): { code?: string; message?: string } | undefined {
    try {
      register(fingerprint, durable);
      return undefined;
    } catch (error) {
      return error as { code?: string; message?: string };
    }
  }

  it('refuses an unknown field, both lists, an empty include and an excluded workspace', () => {
    for (const durable of [false, true]) {
      expect(refusal({ exclude: ['notes'] }, durable)).toMatchObject({
        code: 'invalid_argument',
        message: expect.stringContaining(
          '"notes", not a top-level field of the input schema (workspace, title, priority, note)',
        ),
      });
      expect(refusal({ include: ['title'], exclude: ['note'] }, durable)?.code).toBe('invalid_argument');
      expect(refusal({ include: [] }, durable)?.code).toBe('invalid_argument');
      expect(refusal({ exclude: ['workspace'] }, durable)?.code).toBe('invalid_argument');
      expect(refusal({ include: ['title', 'workspace'] }, durable)).toBeUndefined();
      expect(refusal({ exclude: ['note'] }, durable)).toBeUndefined();
    }
  });

  it('words the default contract unchanged, and an include as the fields it names plus workspace', () => {
    const plain = register(undefined).description;
    expect(plain).toContain('Reuse the same key with the same arguments for every retry');
    expect(plain).not.toContain('On a retry, repeat');
    const included = register({ include: ['title'] }, true).description;
    expect(included).toContain('Reuse the same key with the same workspace and title for every retry');
    expect(included).toContain('priority and note may be worded differently');
  });
});
