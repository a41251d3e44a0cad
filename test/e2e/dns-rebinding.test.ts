import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hostOriginPolicy } from '../../packages/idem-cli/src/server/host-origin-policy.js';
import {
  callTool,
  cleanup,
  closeQuietly,
  connectHttp,
  ensureBuilt,
  makeTempDir,
  startServerProcess,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';
import { MCP_HEADERS, rawRequest, rpc } from '../helpers/raw-http.js';

// The attack of issue 15: a page on evil.example whose DNS name was rebound to 127.0.0.1 posts to
// the loopback server. Host and Origin are checked before anything else, on every path.

beforeAll(() => ensureBuilt());
afterEach(cleanup);
afterAll(cleanup);

const listNotes = rpc('tools/call', { name: 'list_notes', arguments: { workspace: 'default' } });

async function devServerWithNote(args: string[] = []): Promise<{ srv: ServerProcess; body: string }> {
  const srv = await startServerProcess({ args: ['--db', join(makeTempDir(), 'db.sqlite'), ...args] });
  const body = `secret-note-${randomUUID()}`;
  const client = await connectHttp(srv.url);
  try {
    const created = await callTool(client, 'create_note', {
      workspace: 'default',
      idempotency_key: 'k',
      body,
    });
    expect(created.isError).toBeFalsy();
  } finally {
    await closeQuietly(client);
  }
  return { srv, body };
}

function headers(host: string, origin?: string): Record<string, string> {
  return { ...MCP_HEADERS, Host: host, ...(origin === undefined ? {} : { Origin: origin }) };
}

describe('Host and Origin validation (DNS rebinding)', () => {
  it('dev mode: a rebound Host and Origin get 403 and no note body; loopback names get the notes', async () => {
    const { srv, body } = await devServerWithNote();
    const attack = await rawRequest({
      port: srv.port,
      headers: headers('evil.example', 'http://evil.example'),
      body: listNotes,
    });
    expect(attack.status).toBe(403);
    expect(attack.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 }, id: null });
    expect(attack.text).not.toContain(body);
    // Host alone, Origin alone: each is enough to refuse.
    for (const [host, origin] of [
      ['evil.example', undefined],
      [`127.0.0.1:${srv.port}`, 'http://evil.example'],
      [`127.0.0.1:${srv.port}`, 'null'],
    ] as const) {
      const refused = await rawRequest({ port: srv.port, headers: headers(host, origin), body: listNotes });
      expect(refused.status, `${host} ${origin}`).toBe(403);
      expect(refused.text).not.toContain(body);
    }
    // Every path is behind the check, not only /mcp.
    const other = await rawRequest({
      port: srv.port,
      method: 'GET',
      path: '/x',
      headers: headers('evil.example'),
    });
    expect(other.status).toBe(403);
    for (const host of [`localhost:${srv.port}`, `127.0.0.1:${srv.port}`, `[::1]:${srv.port}`]) {
      const ok = await rawRequest({
        port: srv.port,
        headers: headers(host, `http://${host}`),
        body: listNotes,
      });
      expect(ok.status, host).toBe(200);
      expect(ok.text).toContain(body);
    }
    // No Origin (a non-browser client) passes; origins are compared by host name, as the SDK does.
    const vite = await rawRequest({
      port: srv.port,
      headers: headers(`localhost:${srv.port}`, 'http://localhost:5173'),
      body: listNotes,
    });
    expect(vite.status).toBe(200);
    const refusals = await srv.waitForLogs((line) => line.event === 'http.host_refused', 5);
    expect(refusals.map((line) => line.reason)).toEqual([
      'invalid_host',
      'invalid_host',
      'invalid_origin',
      'invalid_origin_header',
      'invalid_host',
    ]);
  });

  it('--allowed-host and --allowed-origin replace the defaults', async () => {
    const { srv, body } = await devServerWithNote([
      '--allowed-host',
      'idem.test,127.0.0.1',
      '--allowed-origin',
      'app.example',
    ]);
    const named = await rawRequest({
      port: srv.port,
      headers: headers('idem.test', 'https://app.example'),
      body: listNotes,
    });
    expect(named.status).toBe(200);
    expect(named.text).toContain(body);
    expect(
      (await rawRequest({ port: srv.port, headers: headers('localhost'), body: listNotes })).status,
    ).toBe(403);
    const ownOrigin = await rawRequest({
      port: srv.port,
      headers: headers('idem.test', 'http://idem.test'),
      body: listNotes,
    });
    expect(ownOrigin.status).toBe(403);
    expect(srv.logs().find((l) => l.event === 'idem.serving')).toMatchObject({
      allowed_hosts: 'idem.test,127.0.0.1',
      allowed_origins: 'app.example',
    });
  });

  it('token mode: a valid token does not get past a rebound Host', async () => {
    const dir = makeTempDir();
    const token = `tok-${randomUUID()}`;
    writeFileSync(
      join(dir, 'tokens.json'),
      JSON.stringify({ [token]: { principal: 'p', workspaces: ['default'] } }),
    );
    const srv = await startServerProcess({
      args: ['--db', join(dir, 'db.sqlite'), '--tokens', join(dir, 'tokens.json')],
    });
    const auth = { Authorization: `Bearer ${token}` };
    const attack = await rawRequest({
      port: srv.port,
      headers: { ...headers('evil.example', 'http://evil.example'), ...auth },
      body: listNotes,
    });
    expect(attack.status).toBe(403);
    const ok = await rawRequest({
      port: srv.port,
      headers: { ...headers('localhost'), ...auth },
      body: listNotes,
    });
    expect(ok.status).toBe(200);
  });

  it('default policy: loopback names, the bound address, every interface address on a wildcard bind', () => {
    expect(hostOriginPolicy({ bindHost: '127.0.0.1' }).hosts).toEqual(['localhost', '127.0.0.1', '[::1]']);
    expect(hostOriginPolicy({ bindHost: '::1' }).hosts).toEqual(['localhost', '127.0.0.1', '[::1]']);
    expect(hostOriginPolicy({ bindHost: '127.0.0.2' }).hosts).toContain('127.0.0.2');
    const wildcard = hostOriginPolicy({ bindHost: '0.0.0.0', extraHosts: ['Idem.Example.com'] });
    const ipv4 = Object.values(networkInterfaces())
      .flat()
      .filter((entry) => entry?.family === 'IPv4')
      .map((entry) => entry?.address);
    for (const address of ipv4) expect(wildcard.hosts).toContain(address);
    expect(wildcard.hosts).toContain('idem.example.com');
    expect(wildcard.origins).toEqual(wildcard.hosts);
    const any = hostOriginPolicy({ bindHost: '0.0.0.0', allowedHosts: ['*'] });
    expect(any).toEqual({ hosts: ['*'], origins: [] });
  });
});
