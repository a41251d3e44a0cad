import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectTarget } from '../../packages/idem/src/client/connect-target.js';
import { IdemClient } from '../../packages/idem/src/client/idem-client.js';
import { noteIdsInDb, tempJournal } from '../helpers/client-fixtures.js';
import {
  cleanup,
  ensureBuilt,
  makeTempDir,
  startServerProcess,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';
import { MCP_HEADERS, rawRequest, rpc } from '../helpers/raw-http.js';

// Issue 15 §4: an oversized body is answered 413 (not a reset connection), slow uploads are cut by
// the request and header timeouts, and the bytes held across in-flight requests are bounded (503).

beforeAll(() => ensureBuilt());
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await cleanup();
});
afterAll(cleanup);

async function server(args: string[]): Promise<{ srv: ServerProcess; db: string }> {
  const db = join(makeTempDir(), 'db.sqlite');
  return { srv: await startServerProcess({ args: ['--db', db, ...args] }), db };
}

/** A raw connection that sends `head` and then whatever the test writes; collects what comes back. */
function rawConnection(
  port: number,
  head: string,
): { socket: Socket; received: () => string; closed: Promise<void> } {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  let received = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(head);
  return { socket, received: () => received, closed };
}

function postHead(port: number, contentLength: number): string {
  return [
    'POST /mcp HTTP/1.1',
    `Host: 127.0.0.1:${port}`,
    'Content-Type: application/json',
    'Accept: application/json, text/event-stream',
    `Content-Length: ${contentLength}`,
    '',
    '',
  ].join('\r\n');
}

function statusOf(response: string): number | undefined {
  const match = /^HTTP\/1\.1 (\d{3})/.exec(response);
  return match === null ? undefined : Number(match[1]);
}

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const ping = rpc('ping');

describe('HTTP limits', () => {
  it('answers an oversized body 413 with a JSON error, declared or chunked, small or huge', async () => {
    const { srv } = await server(['--max-body', '64KiB']);
    for (const size of [64 * 1024 + 1, 20 * 1024 * 1024]) {
      const answer = await rawRequest({ port: srv.port, headers: MCP_HEADERS, body: 'x'.repeat(size) });
      expect(answer.status, `${size}`).toBe(413);
      expect(answer.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 }, id: null });
    }
    // Chunked: no Content-Length, the limit is found as the bytes arrive.
    const chunked = await new Promise<number>((resolve, reject) => {
      const req = request({
        host: '127.0.0.1',
        port: srv.port,
        method: 'POST',
        path: '/mcp',
        headers: MCP_HEADERS,
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      for (let i = 0; i < 10; i += 1) req.write('y'.repeat(16 * 1024));
      req.end();
    });
    expect(chunked).toBe(413);
    // Exactly at the limit is read (and answered as JSON-RPC, here a parse error).
    const atLimit = await rawRequest({ port: srv.port, headers: MCP_HEADERS, body: 'x'.repeat(64 * 1024) });
    expect(atLimit.status).toBe(400);
    expect((await rawRequest({ port: srv.port, headers: MCP_HEADERS, body: ping })).status).toBe(200);
    expect(await srv.waitForLogs((l) => l.event === 'http.too_large', 3)).toHaveLength(3);
  });

  it('IdemClient records a 413 as a definite invalid_argument refusal, not outcome_unknown', async () => {
    const { srv, db } = await server(['--max-body', '8KiB']);
    const { journal } = tempJournal();
    const idem = new IdemClient({
      connect: (options) => connectTarget({ url: srv.url }, options),
      journal,
      policy: { totalMs: 10_000, attemptTimeoutMs: 3_000, maxAttempts: 5, baseDelayMs: 10, maxDelayMs: 50 },
    });
    try {
      const body = `${randomUUID()}${'z'.repeat(9000)}`;
      const outcome = await idem.call('create_note', { workspace: 'default', body });
      expect(outcome).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'invalid_argument' } });
      expect(idem.unsettled()).toEqual([]);
      expect(noteIdsInDb(db, body)).toEqual([]);
    } finally {
      await idem.close();
    }
  });

  it('cuts a stalled upload at --request-timeout and stalled headers at --headers-timeout, serving others meanwhile', async () => {
    const { srv } = await server(['--request-timeout', '2s', '--headers-timeout', '1s']);
    const body = rawConnection(srv.port, postHead(srv.port, 10_000));
    body.socket.write('{"jsonrpc":"2.0",');
    const headers = rawConnection(srv.port, 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    expect((await rawRequest({ port: srv.port, headers: MCP_HEADERS, body: ping })).status).toBe(200);
    await Promise.all([body.closed, headers.closed]);
    expect(statusOf(body.received())).toBe(408);
    expect(statusOf(headers.received())).toBe(408);
    expect((await rawRequest({ port: srv.port, headers: MCP_HEADERS, body: ping })).status).toBe(200);
  });

  it('bounds the bytes buffered across requests: 503 with Retry-After beyond it, 413 for oversized, and stays responsive', async () => {
    const { srv } = await server(['--max-body', '256KiB', '--max-buffered', '1MiB']);
    const declared = 200 * 1024;
    const uploads: ReturnType<typeof rawConnection>[] = [];
    for (let i = 0; i < 10; i += 1) {
      const upload = rawConnection(srv.port, postHead(srv.port, declared));
      upload.socket.write('x'.repeat(100 * 1024)); // half the body, then nothing more
      uploads.push(upload);
      await until(() => upload.received() !== '' || upload.socket.bytesWritten > 100 * 1024);
    }
    // Five fit into 1 MiB (5 × 200 KiB); the five after them are refused at once.
    await until(() => uploads.filter((u) => statusOf(u.received()) === 503).length === 5);
    const refused = uploads.filter((u) => statusOf(u.received()) === 503);
    for (const upload of refused) {
      expect(upload.received()).toMatch(/\r\nRetry-After: 1\r\n/i);
      expect(upload.received()).toContain('"code":-32000');
    }
    const oversized = await Promise.all(
      Array.from({ length: 10 }, () =>
        rawRequest({ port: srv.port, headers: MCP_HEADERS, body: 'x'.repeat(2 * 1024 * 1024) }),
      ),
    );
    expect(oversized.map((r) => r.status)).toEqual(Array(10).fill(413));
    // Small requests still fit and are answered while the five uploads hold their bytes.
    for (let i = 0; i < 5; i += 1)
      expect((await rawRequest({ port: srv.port, headers: MCP_HEADERS, body: ping })).status).toBe(200);
    const padded = rpc('tools/call', {
      name: 'list_notes',
      arguments: { workspace: 'default', pad: 'p'.repeat(declared) },
    });
    expect((await rawRequest({ port: srv.port, headers: MCP_HEADERS, body: padded })).status).toBe(503);
    // The clients give up: their bytes are released, and a large body fits again.
    for (const upload of uploads) upload.socket.destroy();
    let status = 0;
    for (const deadline = Date.now() + 10_000; status !== 200 && Date.now() < deadline;) {
      status = (await rawRequest({ port: srv.port, headers: MCP_HEADERS, body: padded })).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe(200);
    expect((await srv.waitForLogs((l) => l.event === 'http.over_budget', 6)).length).toBeGreaterThanOrEqual(
      6,
    );
  });
});
