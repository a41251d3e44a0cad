import { join } from 'node:path';
import { Ajv } from 'ajv';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import { IdemError } from '../../packages/idem/src/core/errors.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { durableTool, idempotentTool } from '../../packages/idem/src/mcp/idempotent-tool.js';
import { idemResultShape, outcomeResult } from '../../packages/idem/src/mcp/tool-result.js';
import { exactOutputSchema, RESERVED_RESULT_FIELDS } from '../../packages/idem/src/mcp/result-schema.js';
import { IDEM_EVIDENCE_FIELDS, IDEM_RESULT_FIELDS } from '../../packages/idem/src/core/result-field-names.js';
import { SDKS, type SdkCallResult, type SdkSession } from '../helpers/sdk-harness.js';
import { cleanup, makeTempDir } from '../helpers/mcp-fixtures.js';

const sessions: SdkSession[] = [];
const databases: SqliteDatabase[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
  for (const db of databases.splice(0)) db.close();
  await cleanup();
});

const ajv = new Ajv({ strict: false, allErrors: true });

/** Compiles a listed JSON Schema (draft-07 from SDK 1.x, 2020-12 from v2: the same keywords here). */
function compile(schema: Record<string, unknown> | undefined) {
  const { $schema: _dialect, ...rest } = schema ?? {};
  return ajv.compile(rest);
}

/** The business fields `create_ticket` declares beside resource_id. */
const TICKET_RESULT = z.object({ ticket_id: z.string(), priority: z.enum(['low', 'high']) });

/**
 * A tickets application whose `create_ticket` declares its result fields; `returns` decides what
 * its effect returns beside `resource_id` (after it has written its row), so a test can make the
 * effect break its own declaration and then mend it.
 */
function ticketsApp() {
  const db = openSqlite(join(makeTempDir('idem-result-schema-'), 'tickets.sqlite'));
  databases.push(db);
  db.exec('CREATE TABLE tickets (id TEXT PRIMARY KEY, title TEXT)');
  const lines: string[] = [];
  const executor = new Executor({
    store: new SqliteStore(db),
    authorize: (principal, workspace) => principal === 'alice' && workspace === 'team-a',
    logger: (line: string) => lines.push(line),
    inFlightWaitMs: 20,
  });
  const state: { returns: (id: string) => Record<string, string | number> } = {
    returns: (id) => ({ ticket_id: id, priority: 'low' }),
  };
  const createTicket = idempotentTool(executor, {
    name: 'create_ticket',
    version: 1,
    description: 'Opens a ticket.',
    inputSchema: z.object({ title: z.string().min(1) }),
    resultSchema: TICKET_RESULT,
    effect: (app: SqliteDatabase, args) => {
      const id = `t_${crypto.randomUUID()}`;
      app.prepare('INSERT INTO tickets VALUES (?, ?)').run(id, args.title);
      return { resource_id: id, ...state.returns(id) };
    },
  });
  const deploy = durableTool(executor, {
    name: 'deploy',
    version: 1,
    description: 'Deploys a service.',
    inputSchema: z.object({ service: z.string() }),
    resultSchema: z.object({ url: z.string() }),
  });
  const count = () => (db.prepare('SELECT count(*) AS n FROM tickets').get() as { n: number }).n;
  return { tools: [createTicket, deploy], count, state, lines };
}

describe.each(SDKS)('declared result fields on $name', (sdk) => {
  async function connect() {
    const app = ticketsApp();
    const session = await sdk.connect(app.tools, 'alice');
    sessions.push(session);
    const listed = await session.listTools();
    const schemaOf = (name: string) => listed.find((t) => t.name === name)?.outputSchema;
    const validators = new Map(['create_ticket', 'deploy'].map((name) => [name, compile(schemaOf(name))]));
    /** A call whose answer also passes the listed output schema (v2's client skips isError answers). */
    const call = async (name: string, args: unknown): Promise<SdkCallResult> => {
      const result = await session.call(name, args);
      const validate = validators.get(name);
      expect(validate?.(result.sc), JSON.stringify(validate?.errors)).toBe(true);
      return result;
    };
    return { ...app, session, schemaOf, call };
  }

  it('lists an exact output schema: Idem fields and the declared ones, optional, no other key', async () => {
    const { schemaOf } = await connect();
    const schema = schemaOf('create_ticket');
    expect(schema).toMatchObject({
      type: 'object',
      additionalProperties: false,
      properties: {
        status: { enum: expect.arrayContaining(['succeeded', 'rejected', 'failed']) },
        operation_id: { type: 'string' },
        resource_id: { type: 'string' },
        replayed: { type: 'boolean' },
        ticket_id: { type: 'string' },
        priority: { enum: ['low', 'high'] },
      },
    });
    expect(schema?.required).toEqual(['status']);
    expect(schemaOf('deploy')).toMatchObject({
      additionalProperties: false,
      properties: { url: { type: 'string' } },
    });
  });

  it('answers successes, replays and every error in a form the client validates', async () => {
    const { call, count, schemaOf } = await connect();
    // What is checked: the strict schema still takes every answer Idem gives.
    expect(schemaOf('create_ticket')?.additionalProperties).toBe(false);
    const args = { idempotency_key: 'k-1', workspace: 'team-a', title: 'Parser crash' };
    const first = await call('create_ticket', args);
    expect(first.isError).toBe(false);
    expect(first.sc).toMatchObject({ status: 'succeeded', priority: 'low', replayed: false });
    expect(first.sc.ticket_id).toBe(first.sc.resource_id);
    expect((await call('create_ticket', args)).sc).toEqual({ ...first.sc, replayed: true });
    const errors = [
      await call('create_ticket', { ...args, title: 'Another' }),
      await call('create_ticket', { ...args, idempotency_key: 'k-2', extra: 1 }),
      await call('create_ticket', { ...args, idempotency_key: 'k-3', workspace: 'team-b' }),
    ];
    expect(errors.map((e) => [e.isError, e.sc.error?.code])).toEqual([
      [true, 'payload_conflict'],
      [true, 'invalid_argument'],
      [true, 'forbidden'],
    ]);
    expect(count()).toBe(1);

    const deployArgs = { idempotency_key: 'd-1', workspace: 'team-a', service: 'web' };
    expect((await call('deploy', deployArgs)).sc).toMatchObject({ status: 'accepted' });
    // No worker runs: a retry finds it unfinished and answers `running` with `in_progress`.
    expect((await call('deploy', deployArgs)).sc).toMatchObject({
      status: 'running',
      error: { code: 'in_progress' },
    });
  });

  it.each([
    ['a wrong-typed declared field', () => ({ ticket_id: 98765, priority: 'low' }), 'ticket_id'],
    [
      'an undeclared field',
      (id: string) => ({ ticket_id: id, priority: 'low', secret: 'hunter2' }),
      'secret',
    ],
    ['a missing declared field', (id: string) => ({ ticket_id: id }), 'priority'],
  ])(
    'answers an effect that returns %s with internal, commits nothing, and runs it again on retry',
    async (_, returns, field) => {
      const { call, count, state, lines } = await connect();
      state.returns = returns;
      const args = { idempotency_key: 'k-bad', workspace: 'team-a', title: 'Parser crash' };
      const bad = await call('create_ticket', args);
      expect(bad.isError).toBe(true);
      expect(bad.sc).toMatchObject({ status: 'failed', error: { code: 'internal' } });
      expect(bad.sc.error?.message).toContain(field);
      expect(bad.sc.error?.message).not.toMatch(/98765|hunter2/);
      expect(count()).toBe(0);
      const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>).at(-1);
      expect(logged).toMatchObject({ event: 'idem.call', outcome: 'internal' });
      expect(String(logged?.error_message)).toContain(field);
      expect(String(logged?.error_message)).not.toMatch(/98765|hunter2/);
      expect(lines.join('\n')).not.toContain('hunter2');

      // Nothing was recorded under the key: the mended effect runs, rather than a replay.
      state.returns = (id) => ({ ticket_id: id, priority: 'high' });
      const mended = await call('create_ticket', args);
      expect(mended.sc).toMatchObject({ status: 'succeeded', priority: 'high', replayed: false });
      expect(count()).toBe(1);
    },
  );
});

describe('declared result fields', () => {
  it("reserves exactly the names of Idem's schema (one list for the MCP tools, the worker and ops resolve)", () => {
    expect(Object.keys(idemResultShape)).toEqual(IDEM_RESULT_FIELDS);
    expect(Object.keys(exactOutputSchema(z.object({ ticket_id: z.string() })).shape)).toEqual([
      ...IDEM_RESULT_FIELDS,
      ...IDEM_EVIDENCE_FIELDS,
      'ticket_id',
    ]);
    expect(RESERVED_RESULT_FIELDS).toEqual([...IDEM_RESULT_FIELDS, ...IDEM_EVIDENCE_FIELDS]);
  });

  const makeTool = (resultSchema: unknown) => () =>
    idempotentTool(new Executor({ store: new SqliteStore(openSqlite(':memory:')), authorize: () => true }), {
      name: 'create_ticket',
      version: 1,
      description: 'Opens a ticket.',
      inputSchema: {},
      resultSchema: resultSchema as z.ZodObject,
      effect: () => ({ resource_id: 'r' }),
    });

  it('refuses, at registration, a resultSchema that is no zod object or uses a name Idem sets', () => {
    expect(makeTool(z.string())).toThrow(/zod object/);
    for (const name of ['resource_id', 'status', 'error', 'attempts', 'result']) {
      expect(makeTool(z.object({ [name]: z.string() }))).toThrow(IdemError);
    }
    expect(makeTool(z.object({ ticket_id: z.string() }))).not.toThrow();
  });

  it('fits the stored failure answers (attempts and evidence) in the exact schema as well', () => {
    const tool = makeTool(z.object({ ticket_id: z.string() }))();
    const validate = compile(z.toJSONSchema(tool.outputSchema));
    const failed = outcomeResult({
      ok: false,
      status: 'failed',
      attemptId: 'a',
      replayed: true,
      evidence: { attempts: 2, result: { exit_code: 1, output: 'boom' } },
      error: new IdemError('internal', 'the command failed', { operationId: 'op_1', retryable: false }),
    });
    expect(validate(failed.structuredContent), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...failed.structuredContent, other: 1 })).toBe(false);
  });
});
