import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { withCachedJsonSchema } from '../../packages/idem/src/mcp/advertised-schema.js';
import { idempotentTool } from '../../packages/idem/src/mcp/idempotent-tool.js';
import { idemResultSchema } from '../../packages/idem/src/mcp/tool-result.js';
import { cleanup, makeTempDir } from '../helpers/mcp-fixtures.js';

// The SDK-independent tool, called directly as a framework would: arguments, principal, signal.
const databases: SqliteDatabase[] = [];
afterEach(async () => {
  for (const db of databases.splice(0)) db.close();
  await cleanup();
});

function transferTool() {
  const db = openSqlite(join(makeTempDir('idem-tool-'), 'db.sqlite'));
  databases.push(db);
  const executor = new Executor({ store: new SqliteStore(db), authorize: () => true });
  let effects = 0;
  const tool = idempotentTool(executor, {
    name: 'transfer',
    version: 1,
    description: 'Moves an amount between two accounts.',
    // An object-level refinement: it must survive Idem adding its own fields.
    inputSchema: z
      .object({ from: z.string(), to: z.string(), amount: z.number().int().positive() })
      .refine((v) => v.from !== v.to, { message: 'from and to must differ' }),
    effect: () => {
      effects += 1;
      return { resource_id: `tr_${effects}` };
    },
  });
  return { tool, effects: () => effects };
}

const args = { idempotency_key: 'k', workspace: 'w', from: 'a', to: 'b', amount: 5 };

describe('idempotentTool, without any MCP SDK', () => {
  it('performs once per key and keeps the caller’s refinements', async () => {
    const { tool, effects } = transferTool();
    const first = await tool.handle(args, { principal: 'p' });
    expect(first).toMatchObject({ structuredContent: { status: 'succeeded', replayed: false } });
    expect(await tool.handle(args, { principal: 'p' })).toMatchObject({
      structuredContent: { replayed: true, resource_id: 'tr_1' },
    });
    const same = await tool.handle({ ...args, idempotency_key: 'k2', to: 'a' }, { principal: 'p' });
    expect(same).toMatchObject({ isError: true, structuredContent: { error: { code: 'invalid_argument' } } });
    expect(same.structuredContent.error).toMatchObject({ message: expect.stringContaining('must differ') });
    expect(effects()).toBe(1);
  });

  it('answers forbidden without a principal; an aborted call commits nothing and the key stays free', async () => {
    const { tool, effects } = transferTool();
    expect(await tool.handle(args, { principal: undefined })).toMatchObject({
      isError: true,
      structuredContent: { error: { code: 'forbidden' } },
    });
    // SDK v2 aborts a handler's signal when its transport closes (the client went away).
    // An abort is reported as one (retryable: the same call may be sent again), never as internal.
    const aborted = await tool.handle(args, { principal: 'p', signal: AbortSignal.abort() });
    expect(aborted).toMatchObject({
      isError: true,
      structuredContent: { status: 'rejected', error: { code: 'aborted', retryable: true } },
    });
    expect(effects()).toBe(0);
    const retry = await tool.handle(args, { principal: 'p' });
    expect(retry).toMatchObject({ structuredContent: { status: 'succeeded', replayed: false } });
    expect(effects()).toBe(1);
  });

  it('advertises the strict schema while letting every value through the framework', async () => {
    const { tool } = transferTool();
    expect(tool.inputSchema['~standard'].validate(42)).toEqual({ value: 42 });
    const json = tool.inputSchema['~standard'].jsonSchema.input({ target: 'draft-2020-12' });
    expect(json).toMatchObject({
      type: 'object',
      additionalProperties: false,
      properties: { from: {}, to: {}, amount: { type: 'integer' }, workspace: {}, idempotency_key: {} },
    });
    expect(tool.argumentsSchema.safeParse({ ...args, extra: 1 }).success).toBe(false);
    expect(tool.annotations).toEqual({ idempotentHint: true, readOnlyHint: false, destructiveHint: false });
  });

  it('converts an output schema to JSON Schema once per target, and still validates with it', () => {
    const cached = withCachedJsonSchema(idemResultSchema);
    expect(withCachedJsonSchema(idemResultSchema)).toBe(cached);
    const options = { target: 'draft-2020-12' } as const;
    expect(cached['~standard'].jsonSchema.output(options)).toBe(
      cached['~standard'].jsonSchema.output(options),
    );
    expect(cached['~standard'].validate({ status: 'succeeded' })).toEqual({ value: { status: 'succeeded' } });
    expect(cached['~standard'].validate({ status: 'nope' })).toMatchObject({
      issues: [{ path: ['status'] }],
    });
  });
});
