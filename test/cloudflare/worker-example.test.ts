import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleForWorkerd } from '../../scripts/bundle-cloudflare-example.mjs';
import {
  REPO_ROOT,
  callTool,
  cleanup,
  closeQuietly,
  connectHttp,
  ensureBuilt,
  makeTempDir,
} from '../helpers/mcp-fixtures.js';
import { startWorker, type RunningWorker } from './workerd-fixtures.js';

/*
 * examples/cloudflare-worker.ts bundled as `npm run build:examples` bundles it, run in workerd
 * (miniflare) with IdemObject on SQLite storage and examples/cloudflare-worker.json's settings, and
 * called by SDK clients of both protocol eras: create, replay, conflict, and 8 concurrent calls of
 * one key making one note.
 */

let worker: RunningWorker;
let mcp: string;

beforeAll(async () => {
  ensureBuilt();
  const script = join(makeTempDir('idem-cf-example-'), 'cloudflare-worker.mjs');
  await bundleForWorkerd(join(REPO_ROOT, 'examples', 'cloudflare-worker.ts'), script);
  worker = await startWorker(script, join(REPO_ROOT, 'examples', 'cloudflare-worker.json'), {
    IDEM: 'IdemObject',
  });
  mcp = `${worker.url}mcp`;
}, 180_000);

afterAll(async () => {
  await worker?.stop();
  await cleanup();
});

async function notesOf(client: Client, workspace: string): Promise<{ note_id: string; body: string }[]> {
  const listed = await callTool(client, 'list_notes', { workspace });
  expect(listed.isError).toBe(false);
  return (listed.sc as unknown as { notes: { note_id: string; body: string }[] }).notes;
}

describe('examples/cloudflare-worker.ts in workerd', () => {
  it('creates a note once, replays it, refuses other arguments under the same key', async () => {
    const client = await connectHttp(mcp);
    try {
      const workspace = `ws-${randomUUID()}`;
      const args = { idempotency_key: randomUUID(), workspace, body: 'from workerd' };
      const first = await callTool(client, 'create_note', args);
      const retry = await callTool(client, 'create_note', args);
      const conflict = await callTool(client, 'create_note', { ...args, body: 'something else' });
      expect(first.sc).toMatchObject({ status: 'succeeded', replayed: false });
      expect(retry.sc).toMatchObject({
        status: 'succeeded',
        replayed: true,
        note_id: first.sc.note_id,
        operation_id: first.sc.operation_id,
      });
      expect(conflict.isError).toBe(true);
      expect(conflict.sc).toMatchObject({ error: { code: 'payload_conflict' } });
      expect(await notesOf(client, workspace)).toEqual([{ note_id: first.sc.note_id, body: 'from workerd' }]);
    } finally {
      await closeQuietly(client);
    }
  });

  it('8 concurrent calls of one key make one note, every answer naming it', async () => {
    const clients = await Promise.all(Array.from({ length: 8 }, () => connectHttp(mcp)));
    try {
      const workspace = `ws-${randomUUID()}`;
      const args = { idempotency_key: randomUUID(), workspace, body: 'once' };
      const answers = await Promise.all(clients.map((client) => callTool(client, 'create_note', args)));
      const ids = new Set(answers.map((answer) => answer.sc.note_id));
      expect(answers.every((answer) => answer.sc.status === 'succeeded')).toBe(true);
      expect(answers.filter((answer) => answer.sc.replayed === false)).toHaveLength(1);
      expect(ids.size).toBe(1);
      expect(await notesOf(clients[0] as Client, workspace)).toHaveLength(1);
    } finally {
      await Promise.all(clients.map((client) => closeQuietly(client)));
    }
  });

  it('serves the 2026-07-28 era too (server/discover, no initialize)', async () => {
    const client = new Client({ name: 'modern', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcp)));
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      const workspace = `ws-${randomUUID()}`;
      const args = { idempotency_key: randomUUID(), workspace, body: 'modern' };
      const first = await client.callTool({ name: 'create_note', arguments: args });
      const retry = await client.callTool({ name: 'create_note', arguments: args });
      expect(first.structuredContent).toMatchObject({ status: 'succeeded', replayed: false });
      expect(retry.structuredContent).toMatchObject({ status: 'succeeded', replayed: true });
    } finally {
      await closeQuietly(client);
    }
  });
});
