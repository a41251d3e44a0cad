import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdemClient, IntentJournal } from '../../packages/idem/src/client/index.js';
import { cleanup, ensureBuilt, makeTempDir, startServerProcess } from '../helpers/mcp-fixtures.js';

// IdemClient lists the tools once per connection at 2026-07-28, so that the SDK client mirrors the
// key (marked x-mcp-header) into Mcp-Param-Idempotency-Key on the first call already: one
// tools/call on the wire, never a -32020 refusal and a second send. At 2025 nothing is mirrored.

beforeAll(() => ensureBuilt());
afterAll(cleanup);

interface Sent {
  readonly method: string;
  readonly key: string | undefined;
  readonly header: string | null;
}

async function callThroughIdemClient(url: string, mode: 'legacy' | { pin: string }): Promise<Sent[]> {
  const sent: Sent[] = [];
  const recording: typeof fetch = async (input, init) => {
    if (typeof init?.body === 'string') {
      const message = JSON.parse(init.body) as {
        method?: string;
        params?: { arguments?: { idempotency_key?: string } };
      };
      sent.push({
        method: String(message.method),
        key: message.params?.arguments?.idempotency_key,
        header: new Headers(init.headers).get('mcp-param-idempotency-key'),
      });
    }
    return fetch(input, init);
  };
  const idem = new IdemClient({
    journal: IntentJournal.open(join(makeTempDir(), 'intents.sqlite')),
    connect: async () => {
      const client = new Client(
        { name: 'idem-e2e-header', version: '0.0.0' },
        { versionNegotiation: { mode } },
      );
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: recording }));
      return client;
    },
  });
  try {
    const outcome = await idem.call('create_note', { workspace: 'default', body: 'header' });
    expect(outcome.status).toBe('succeeded');
  } finally {
    await idem.close();
  }
  return sent;
}

describe('IdemClient sends the key as Mcp-Param-Idempotency-Key at 2026-07-28', () => {
  it('pinned to 2026-07-28: one tools/call, its header equal to the body key; legacy: no header', async () => {
    const srv = await startServerProcess({ args: ['--db', join(makeTempDir(), 'db.sqlite')] });
    const modern = await callThroughIdemClient(srv.url, { pin: '2026-07-28' });
    const calls = modern.filter((message) => message.method === 'tools/call');
    expect(calls).toHaveLength(1);
    expect(calls[0]?.key).toMatch(/.+/);
    expect(calls[0]?.header).toBe(calls[0]?.key);
    const before = modern.findIndex((message) => message.method === 'tools/list');
    expect(before).toBeGreaterThanOrEqual(0);
    expect(before).toBeLessThan(modern.indexOf(calls[0] as Sent));

    const legacy = await callThroughIdemClient(srv.url, 'legacy');
    const legacyCalls = legacy.filter((message) => message.method === 'tools/call');
    expect(legacyCalls).toHaveLength(1);
    expect(legacyCalls[0]?.header).toBeNull();
    expect(legacy.some((message) => message.method === 'tools/list')).toBe(false);
  });
});
