import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  operationName,
  proxiedTools,
  schemaVersion,
} from '../../packages/idem-cli/src/proxy/proxy-tools.js';

const settings = {
  exclude: new Set(['skip_me']),
  upstreamKeys: new Map([['charge', 'request_id']]),
  retentionMs: 24 * 3_600_000,
  tombstoneTtlMs: 30 * 86_400_000,
  statusTool: 'get_operation',
};

const schema = { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] };

describe('proxiedTools', () => {
  it('passes read-only, excluded and self-keyed tools through and keys every other one', () => {
    const tools = proxiedTools(
      [
        { name: 'read', inputSchema: schema, annotations: { readOnlyHint: true } },
        { name: 'skip_me', inputSchema: schema },
        {
          name: 'own_key',
          inputSchema: { type: 'object', properties: { idempotency_key: { type: 'string' } } },
        },
        {
          name: 'create',
          description: 'Creates.',
          inputSchema: schema,
          annotations: { readOnlyHint: false },
        },
        { name: 'charge', inputSchema: schema },
        { name: 'research', inputSchema: schema, execution: { taskSupport: 'required' } },
      ],
      settings,
    );
    expect(tools.map((tool) => [tool.upstream.name, tool.kind === 'pass' ? tool.reason : 'keyed'])).toEqual([
      ['read', 'read_only'],
      ['skip_me', 'excluded'],
      ['own_key', 'has_idempotency_key'],
      ['create', 'keyed'],
      ['charge', 'keyed'],
      ['research', 'task_required'],
    ]);
    const create = tools[3];
    if (create?.kind !== 'keyed') throw new Error('create is keyed');
    expect(create.inputSchema.required).toEqual(['title', 'idempotency_key']);
    expect(create.inputSchema.properties).toHaveProperty('title');
    expect(create.inputSchema.properties).toHaveProperty('idempotency_key');
    expect(create.description).toMatch(/^Creates\.\n\nRetry safety: this tool takes an idempotency_key/);
    expect(create.description).toMatch(/get_operation/);
    expect(create.upstreamKeyArg).toBeUndefined();
    const charge = proxiedTools(
      [
        {
          name: 'charge',
          inputSchema: {
            type: 'object',
            properties: { amount: { type: 'number' }, request_id: { type: 'string' } },
            required: ['amount', 'request_id'],
          },
        },
      ],
      settings,
    )[0];
    if (charge?.kind !== 'keyed') throw new Error('charge is keyed');
    expect(charge.upstreamKeyArg).toBe('request_id');
    // The proxy fills the upstream's own key: the caller neither sees nor sends it.
    expect(Object.keys(charge.inputSchema.properties as object)).toEqual(['amount', 'idempotency_key']);
    expect(charge.inputSchema.required).toEqual(['amount', 'idempotency_key']);
    // The upstream's own schema object is left as it was.
    expect(schema.required).toEqual(['title']);
  });
});

describe('schemaVersion', () => {
  it('is a positive 31-bit integer, the same for the same schema whatever its key order', () => {
    const a = schemaVersion(schema);
    const b = schemaVersion({
      required: ['title'],
      properties: { title: { type: 'string' } },
      type: 'object',
    });
    expect(a).toBe(b);
    expect(Number.isSafeInteger(a) && a >= 1 && a < 2 ** 31).toBe(true);
  });

  it('changes when the schema changes', () => {
    const changed = { ...schema, properties: { ...schema.properties, note: { type: 'string' } } };
    expect(schemaVersion(changed)).not.toBe(schemaVersion(schema));
  });

  it('canonicalJson sorts keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: [2, { y: 1, x: 2 }], a: null })).toBe('{"a":null,"b":[2,{"x":2,"y":1}]}');
  });
});

describe('operationName', () => {
  it('keeps a name that fits and maps any other to a distinct fitting one', () => {
    expect(operationName('create_note')).toBe('create_note');
    const mapped = operationName('getTinyImage');
    expect(mapped).toMatch(/^[a-z][a-z0-9_.-]{0,63}$/);
    expect(operationName('getTinyImage')).toBe(mapped);
    expect(operationName('GetTinyImage')).not.toBe(mapped);
    expect(operationName('9lives')).toMatch(/^[a-z][a-z0-9_.-]{0,63}$/);
    expect(operationName('x'.repeat(100))).toMatch(/^[a-z][a-z0-9_.-]{0,63}$/);
  });
});
