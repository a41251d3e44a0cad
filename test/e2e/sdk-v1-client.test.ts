import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, ensureBuilt, makeTempDir, startServerProcess } from '../helpers/mcp-fixtures.js';
import { callToolV1, connectHttpV1, connectStdioV1, type V1Client } from '../helpers/v1-fixtures.js';

// The reference server is on SDK v2; agents built on SDK 1.x must see the same tools and results.
const clients: V1Client[] = [];
beforeAll(() => ensureBuilt());
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  await cleanup();
});

const transports: [string, () => Promise<V1Client>][] = [
  [
    'Streamable HTTP',
    async () => {
      const server = await startServerProcess({ args: ['--db', join(makeTempDir(), 'db.sqlite')] });
      return connectHttpV1(server.url);
    },
  ],
  ['stdio', () => connectStdioV1(join(makeTempDir(), 'db.sqlite'))],
];

describe.each(transports)('an SDK 1.x client over %s against the v2 reference server', (_, open) => {
  it('lists create_note with its fields, and gets coded, schema-valid results for every outcome', async () => {
    const client = await open();
    clients.push(client);
    const { tools } = await client.listTools();
    const create = tools.find((t) => t.name === 'create_note');
    expect(Object.keys(create?.inputSchema.properties ?? {}).sort()).toEqual([
      'body',
      'idempotency_key',
      'notify',
      'workspace',
    ]);
    expect(create?.inputSchema).toMatchObject({ additionalProperties: false });
    expect(create?.outputSchema).toMatchObject({ type: 'object' });
    expect(tools.map((t) => t.name).sort()).toEqual([
      'cancel_operation',
      'create_note',
      'get_note',
      'get_operation',
      'list_notes',
      'start_deployment',
    ]);

    const args = { idempotency_key: 'v1-key', workspace: 'default', body: 'from a 1.x agent' };
    const first = await callToolV1(client, 'create_note', args);
    expect(first).toMatchObject({ isError: false, sc: { status: 'succeeded', replayed: false } });
    const again = await callToolV1(client, 'create_note', args);
    expect(again.sc).toEqual({ ...first.sc, replayed: true });
    // Error results carry structuredContent too, which the 1.x client validates against the schema.
    const conflict = await callToolV1(client, 'create_note', { ...args, body: 'other' });
    expect(conflict).toMatchObject({ isError: true, sc: { error: { code: 'payload_conflict' } } });
    const invalid = await callToolV1(client, 'create_note', { ...args, tenant_id: 't' });
    expect(invalid).toMatchObject({ isError: true, sc: { error: { code: 'invalid_argument' } } });
    const op = await callToolV1(client, 'get_operation', { operation_id: first.sc.operation_id });
    expect(op.sc).toMatchObject({ status: 'succeeded', resource_id: first.sc.resource_id });
    const notes = await callToolV1(client, 'list_notes', { workspace: 'default' });
    expect((notes.sc.notes as { note_id: string }[]).map((n) => n.note_id)).toEqual([first.sc.resource_id]);
  });
});
