import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { ProtocolError } from '@modelcontextprotocol/client';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../packages/idem/src/core/errors.js';
import { RESULT_STATUSES } from '../../packages/idem/src/mcp/tool-result.js';
import { ReferenceApp } from '../../packages/idem-cli/src/server/reference-app.js';
import { TokenRegistry } from '../../packages/idem-cli/src/server/token-registry.js';
import { callTool, cleanup, connectInMemory, makeTempDir, type ToolResult } from '../helpers/mcp-fixtures.js';

const HELD = ['default', 'ws-2'];
const FIELDS = new Set(['idempotency_key', 'workspace', 'body']);
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

let app: ReferenceApp;
let client: Client;

function counts(): { notes: number; receipts: number } {
  const one = (sql: string) => (app.db.prepare(sql).get() as { n: number }).n;
  return {
    notes: one('SELECT count(*) AS n FROM notes'),
    receipts: one('SELECT count(*) AS n FROM idem_operations'),
  };
}

beforeAll(async () => {
  app = new ReferenceApp({
    dbPath: join(makeTempDir('idem-prop-'), 'db.sqlite'),
    registry: TokenRegistry.fixed({ principal: 'prop', workspaces: HELD }),
  });
  client = await connectInMemory(app, 'prop');
});

afterAll(async () => {
  await client?.close();
  await app?.close();
  await cleanup();
});

// ---------------------------------------------------------------------------------------------
// Generators: mostly-valid values (so that successes, replays and conflicts happen), mixed with
// wrong types, boundary and huge lengths, unicode, control characters and lone surrogates.

const anyJsonish = fc.anything({ maxDepth: 2, maxKeys: 4 });
const hugeString = fc
  .tuple(
    fc.constantFrom(9_999, 10_000, 10_001, 100_000, 1_000_000),
    fc.constantFrom('a', 'é', '\u0000', '😀'),
  )
  .map(([n, ch]) => ch.repeat(Math.ceil(n / ch.length)).slice(0, n));
const controlString = fc.string({ unit: 'binary-ascii', maxLength: 20 });
const unicodeString = fc.string({ unit: 'grapheme', maxLength: 20 });
const binaryString = fc.string({ unit: 'binary', maxLength: 20 });
const loneSurrogate = fc
  .tuple(fc.string({ maxLength: 5 }), fc.integer({ min: 0xd800, max: 0xdfff }))
  .map(([s, code]) => `${s}${String.fromCharCode(code)}`);

const keyArb = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('k-1', 'k-2', 'k-3', 'key with spaces', '~!@#$%^&*()') },
  { weight: 3, arbitrary: fc.string({ minLength: 1, maxLength: 40 }) },
  { weight: 1, arbitrary: fc.constantFrom('', 'x'.repeat(255), 'x'.repeat(256), 'tab\there', 'nl\n', 'é') },
  { weight: 1, arbitrary: controlString },
  { weight: 1, arbitrary: unicodeString },
  { weight: 1, arbitrary: hugeString },
  { weight: 1, arbitrary: anyJsonish },
);

const workspaceArb = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...HELD) },
  { weight: 1, arbitrary: fc.constantFrom('not-held', '', 'w'.repeat(128), 'w'.repeat(129), 'DEFAULT') },
  { weight: 1, arbitrary: unicodeString },
  { weight: 1, arbitrary: loneSurrogate },
  { weight: 1, arbitrary: anyJsonish },
);

const bodyArb = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('hello', 'hello again', 'third body') },
  { weight: 3, arbitrary: fc.string({ minLength: 1, maxLength: 60 }) },
  { weight: 2, arbitrary: unicodeString },
  { weight: 2, arbitrary: binaryString },
  { weight: 2, arbitrary: controlString },
  { weight: 1, arbitrary: loneSurrogate },
  { weight: 2, arbitrary: hugeString },
  { weight: 2, arbitrary: anyJsonish },
);

const extraKeys = fc.dictionary(
  fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('__proto__', 'constructor', 'principal', 'status')),
  anyJsonish,
  { maxKeys: 2 },
);

/** Mostly valid calls over a few identities, so that executions, replays and conflicts all happen. */
const plausibleArgs = fc.record({
  idempotency_key: fc.constantFrom('k-1', 'k-2', 'key with spaces', '~!@#$%^&*()'),
  workspace: fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...HELD) }, fc.constant('not-held')),
  body: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom('hello', 'hello again') },
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }),
  ),
});

const chaoticArgs = fc
  .tuple(
    fc.record(
      { idempotency_key: keyArb, workspace: workspaceArb, body: bodyArb },
      { requiredKeys: ['idempotency_key', 'workspace', 'body'] },
    ),
    fc.oneof({ weight: 2, arbitrary: fc.constant({}) }, extraKeys),
  )
  .map(([args, extra]) => ({ ...extra, ...args }));

const argsArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: plausibleArgs },
  { weight: 4, arbitrary: chaoticArgs },
  {
    weight: 1,
    arbitrary: fc.record(
      { idempotency_key: keyArb, workspace: workspaceArb, body: bodyArb },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: extraKeys },
  { weight: 1, arbitrary: anyJsonish },
);

// ---------------------------------------------------------------------------------------------
// The oracle: what the server must answer, given what it committed so far.

type Expected =
  | { kind: 'protocol_error' }
  | { kind: 'protocol_error_or_invalid_argument' }
  | { kind: 'invalid_argument' }
  | { kind: 'forbidden' }
  | { kind: 'executed' }
  | { kind: 'replayed'; resourceId: string }
  | { kind: 'payload_conflict' };

/** (workspace, key) → the body and resource of the note created with that key. */
const model = new Map<string, { body: string; resourceId: string }>();
/** How often each expected outcome came up. */
const seen = new Map<Expected['kind'], number>();

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function expectedFor(wire: unknown): Expected {
  if (wire === undefined) return { kind: 'invalid_argument' };
  if (!isPlainObject(wire)) return { kind: 'protocol_error' };
  // The SDK's request schema (zod v4 z.record) refuses an object whose own `constructor` is not a
  // function, with JSON-RPC -32603, before any tool code runs. Either answer is acceptable here.
  if (Object.hasOwn(wire, 'constructor')) return { kind: 'protocol_error_or_invalid_argument' };
  if (Object.keys(wire).some((k) => !FIELDS.has(k))) return { kind: 'invalid_argument' };
  const { idempotency_key: key, workspace, body } = wire;
  if (typeof body !== 'string' || body.length < 1 || body.length > 10_000)
    return { kind: 'invalid_argument' };
  if (typeof workspace !== 'string' || workspace.length < 1 || workspace.length > 128) {
    return { kind: 'invalid_argument' };
  }
  if (typeof key !== 'string' || !/^[\x20-\x7e]{1,255}$/.test(key)) return { kind: 'invalid_argument' };
  if (LONE_SURROGATE.test(body) || LONE_SURROGATE.test(workspace)) return { kind: 'invalid_argument' };
  // U+0000 is refused on every engine (PostgreSQL cannot store it).
  if (body.includes('\u0000') || workspace.includes('\u0000')) return { kind: 'invalid_argument' };
  if (!HELD.includes(workspace)) return { kind: 'forbidden' };
  const known = model.get(JSON.stringify([workspace, key]));
  if (known === undefined) return { kind: 'executed' };
  return known.body === body
    ? { kind: 'replayed', resourceId: known.resourceId }
    : { kind: 'payload_conflict' };
}

function checkErrorShape(result: ToolResult): void {
  expect(result.isError).toBe(true);
  const { error } = result.sc;
  expect(RESULT_STATUSES).toContain(result.sc.status);
  expect(ERROR_CODES).toContain(error?.code);
  expect(typeof error?.message).toBe('string');
  expect(error?.message.length).toBeGreaterThan(0);
  expect(typeof error?.retryable).toBe('boolean');
  expect(result.sc).not.toHaveProperty('resource_id');
  expect(result.raw.content).toEqual([{ type: 'text', text: JSON.stringify(result.sc) }]);
}

describe('create_note with arbitrary arguments', () => {
  it('answers every call with a valid success or a coded error, and a rejected call writes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(argsArb, async (args) => {
        // What the server receives: the arguments after a JSON round trip, as on any real wire.
        const json = JSON.stringify(args);
        let wire: unknown = json === undefined ? undefined : JSON.parse(json);
        // The SDK's request schema (zod v4 z.record) drops an own `__proto__` key before the tool
        // sees the arguments; the server may answer as without it, or reject the key.
        const protoDropped = isPlainObject(wire) && Object.hasOwn(wire, '__proto__');
        if (protoDropped) {
          wire = Object.fromEntries(Object.entries(wire as object).filter(([k]) => k !== '__proto__'));
        }
        const expected = expectedFor(wire);
        seen.set(expected.kind, (seen.get(expected.kind) ?? 0) + 1);
        const before = counts();

        let result: ToolResult | undefined;
        let thrown: unknown;
        try {
          result = await callTool(client, 'create_note', args as Record<string, unknown>);
        } catch (error) {
          thrown = error;
        }
        const after = counts();

        if (expected.kind === 'protocol_error_or_invalid_argument' && thrown === undefined) {
          if (result === undefined) throw new Error('no result');
          checkErrorShape(result);
          expect(result.sc.error?.code).toBe('invalid_argument');
          expect(after).toEqual(before);
          return;
        }
        if (expected.kind === 'protocol_error' || expected.kind === 'protocol_error_or_invalid_argument') {
          // Not an argument object at all: the SDK refuses the request before any tool runs.
          expect(thrown).toBeInstanceOf(ProtocolError);
          expect(after).toEqual(before);
          return;
        }
        expect(thrown).toBeUndefined();
        if (result === undefined) throw new Error('no result');

        if (result.isError) {
          checkErrorShape(result);
          if (!(protoDropped && result.sc.error?.code === 'invalid_argument')) {
            expect(result.sc.error?.code).toBe(expected.kind);
          }
          expect(after, 'a rejected call must not write a note or a receipt').toEqual(before);
          if (expected.kind === 'invalid_argument') expect(result.sc.status).toBe('rejected');
          return;
        }

        const wireArgs = wire as { idempotency_key: string; workspace: string; body: string };
        if (result.sc.replayed === false && typeof result.sc.resource_id === 'string') {
          // Record what the server committed before asserting anything, so that the model stays
          // true to the database while fast-check shrinks a failure.
          model.set(JSON.stringify([wireArgs.workspace, wireArgs.idempotency_key]), {
            body: wireArgs.body,
            resourceId: result.sc.resource_id,
          });
        }
        expect(['executed', 'replayed']).toContain(expected.kind);
        expect(result.sc.status).toBe('succeeded');
        expect(result.sc.resource_id).toMatch(/^\S+$/);
        expect(result.sc.operation_id).toMatch(/^\S+$/);
        expect(result.sc.note_id).toBe(result.sc.resource_id);
        if (expected.kind === 'replayed') {
          expect(result.sc.replayed).toBe(true);
          expect(result.sc.resource_id).toBe(expected.resourceId);
          expect(after).toEqual(before);
        } else {
          expect(result.sc.replayed).toBe(false);
          expect(after).toEqual({ notes: before.notes + 1, receipts: before.receipts + 1 });
          const row = app.db
            .prepare('SELECT body, workspace, operation_id FROM notes WHERE note_id = ?')
            .get(result.sc.resource_id);
          expect(row).toEqual({
            body: wireArgs.body,
            workspace: wireArgs.workspace,
            operation_id: result.sc.operation_id,
          });
        }
      }),
      { numRuns: 200 },
    );
    // The generators must actually reach the interesting branches.
    for (const kind of [
      'executed',
      'replayed',
      'payload_conflict',
      'forbidden',
      'invalid_argument',
    ] as const) {
      expect(seen.get(kind) ?? 0, kind).toBeGreaterThan(0);
    }
  });

  it.each([
    ['body of 1 character', { body: 'x' }, 'ok'],
    ['body of 10000 characters', { body: 'b'.repeat(10_000) }, 'ok'],
    ['empty body', { body: '' }, 'invalid_argument'],
    ['body of 10001 characters', { body: 'b'.repeat(10_001) }, 'invalid_argument'],
    ['key of 255 characters', { idempotency_key: 'k'.repeat(254) + '!' }, 'ok'],
    ['key of 256 characters', { idempotency_key: 'k'.repeat(256) }, 'invalid_argument'],
    ['empty key', { idempotency_key: '' }, 'invalid_argument'],
  ] as const)('%s', async (_label, override, outcome) => {
    const args = {
      idempotency_key: `boundary-${_label}`,
      workspace: 'default',
      body: 'boundary body',
      ...override,
    };
    const before = counts();
    const result = await callTool(client, 'create_note', args);
    if (outcome === 'ok') {
      expect(result.isError).toBe(false);
      expect(result.sc).toMatchObject({ status: 'succeeded', replayed: false });
      expect(counts()).toEqual({ notes: before.notes + 1, receipts: before.receipts + 1 });
      const stored = app.db.prepare('SELECT body FROM notes WHERE note_id = ?').get(result.sc.resource_id);
      expect(stored).toEqual({ body: args.body });
    } else {
      checkErrorShape(result);
      expect(result.sc.error?.code).toBe('invalid_argument');
      expect(result.sc.status).toBe('rejected');
      expect(counts()).toEqual(before);
    }
  });
});
