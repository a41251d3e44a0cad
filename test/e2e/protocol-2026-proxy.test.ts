import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  REPO_ROOT,
  cleanEnv,
  cleanup,
  closeQuietly,
  ensureBuilt,
  freePort,
  makeTempDir,
  startServerProcess,
  track,
} from '../helpers/mcp-fixtures.js';

// `idem proxy` on the 2026-07-28 revision, at both of its sides: a client pinned to 2026-07-28 in
// front, and an upstream that serves only 2026-07-28 (refusing 2025 traffic) or only the 2025 era
// behind. A proxied retry replays; the upstream receives one call per key.

const UPSTREAM = join(REPO_ROOT, 'test/helpers/proxy-upstream.mjs');

beforeAll(() => ensureBuilt());
const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await closeQuietly(client);
  await cleanup();
});
afterAll(cleanup);

async function startUpstream(log: string, era: '2025' | '2026'): Promise<string> {
  const port = await freePort();
  const proc = track(
    spawn(process.execPath, [UPSTREAM], {
      cwd: REPO_ROOT,
      env: cleanEnv({ UPSTREAM_LOG: log, UPSTREAM_HTTP_PORT: String(port), UPSTREAM_ERA: era }),
      stdio: ['ignore', 'ignore', 'pipe'],
    }),
  );
  await new Promise<void>((resolve, reject) => {
    proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      if (chunk.includes('listening')) resolve();
    });
    proc.once('exit', (code) => reject(new Error(`upstream exited (${code})`)));
  });
  return `http://127.0.0.1:${port}/mcp`;
}

async function connect(url: string, mode: 'legacy' | { pin: string }): Promise<Client> {
  const client = new Client({ name: 'idem-e2e-2026', version: '0.0.0' }, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  clients.push(client);
  return client;
}

function received(log: string, label: string): number {
  let text = '';
  try {
    text = readFileSync(log, 'utf8');
  } catch {
    return 0;
  }
  return text
    .split('\n')
    .filter(Boolean)
    .filter((line) => (JSON.parse(line) as { label?: string }).label === label).length;
}

describe.each(['2026', '2025'] as const)('idem proxy in front of a %s-era upstream', (era) => {
  it('a client pinned to 2026-07-28 executes, a proxied retry replays, other arguments conflict', async () => {
    const dir = makeTempDir('idem-proxy-2026-');
    const log = join(dir, 'calls.jsonl');
    const upstream = await startUpstream(log, era);
    const proxy = await startServerProcess({
      command: 'proxy',
      args: ['--db', join(dir, 'proxy.sqlite'), '--upstream', upstream],
      readyTimeoutMs: 30_000,
    });
    const connected = await proxy.waitForLogs((line) => line.event === 'proxy.upstream_connected', 1);
    expect(connected[0]?.protocol_version).toBe(era === '2026' ? '2026-07-28' : '2025-11-25');

    const client = await connect(proxy.url, { pin: '2026-07-28' });
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const args = { idempotency_key: 'p-1', label: `one-${era}` };
    const first = (await client.callTool({ name: 'record_call', arguments: args })) as CallToolResult;
    expect(first.isError).not.toBe(true);
    const retry = (await client.callTool({ name: 'record_call', arguments: args })) as CallToolResult;
    expect(retry.content).toEqual(first.content);
    expect(retry._meta?.['idem/replayed']).toBe(true);
    expect(received(log, `one-${era}`)).toBe(1);
    const conflict = (await client.callTool({
      name: 'record_call',
      arguments: { ...args, label: 'other' },
    })) as CallToolResult;
    expect(conflict.isError).toBe(true);
    expect(JSON.stringify(conflict.structuredContent)).toContain('payload_conflict');
    expect(received(log, 'other')).toBe(0);

    // A 2025 client of the same proxy replays the same receipt.
    const legacy = await connect(proxy.url, 'legacy');
    const again = (await legacy.callTool({ name: 'record_call', arguments: args })) as CallToolResult;
    expect(again.content).toEqual(first.content);
    expect(received(log, `one-${era}`)).toBe(1);
  });
});
