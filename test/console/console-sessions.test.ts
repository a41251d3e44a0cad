import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../packages/idem/src/core/logger.js';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import { consoleApp } from '../../packages/idem-cli/src/console/console-app.js';
import { hostOriginPolicy } from '../../packages/idem-cli/src/server/host-origin-policy.js';
import { TokenRegistry } from '../../packages/idem-cli/src/server/token-registry.js';
import { cleanup, makeTempDir } from '../helpers/mcp-fixtures.js';

const OPERATOR_TOKEN = 'operator-token-0123456789abcdef';

let dir: string;
beforeAll(() => {
  dir = makeTempDir('idem-console-sessions-');
});
afterAll(cleanup);

interface Instance {
  readonly base: string;
  stop(): Promise<void>;
}

/** One `serve --console` instance: its own store connection and tokens registry, one database. */
async function instance(dbPath: string, tokensPath: string): Promise<Instance> {
  const store = new SqliteStore(openSqlite(dbPath));
  const registry = TokenRegistry.fromFile(tokensPath, { recheckMs: 0 });
  const handler = consoleApp({
    store,
    prefix: '/console',
    policy: hostOriginPolicy({ bindHost: '127.0.0.1' }),
    credentials: { registry },
    secureCookies: false,
    retentionMs: 60_000,
    logger: silentLogger,
  });
  const server: Server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/console`,
    stop: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await store.close();
    },
  };
}

async function get(url: string, cookie: string) {
  const response = await fetch(url, { redirect: 'manual', headers: { Cookie: cookie } });
  return { status: response.status, text: await response.text(), location: response.headers.get('location') };
}

async function post(url: string, cookie: string, form: Record<string, string>) {
  const response = await fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookie },
    body: new URLSearchParams(form).toString(),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe('console sessions live in the store', () => {
  it('two instances share a session, a restart keeps it, a sign-out or a revoked token ends it everywhere', async () => {
    const dbPath = join(dir, 'shared.sqlite');
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ [OPERATOR_TOKEN]: { principal: 'olivia', role: 'operator' } }));
    const a = await instance(dbPath, tokens);
    let b = await instance(dbPath, tokens);
    try {
      const signIn = await post(`${a.base}/login`, '', { token: OPERATOR_TOKEN });
      expect(signIn.status).toBe(303);
      const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] as string;
      expect(cookie).toMatch(/^idem_console=.{20,}/);

      // The other instance knows the session (no sticky routing needed), and its CSRF token.
      const onB = await get(`${b.base}/`, cookie);
      expect(onB.status).toBe(200);
      expect(onB.text).toContain('olivia');
      const csrf = /name="csrf" value="([^"]+)"/.exec(onB.text)?.[1] as string;
      expect(csrf).toBeTruthy();
      const onA = await get(`${a.base}/`, cookie);
      expect(onA.text).toContain(`value="${csrf}"`);

      // A restart of B (a new process on the same database) keeps everyone signed in.
      await b.stop();
      b = await instance(dbPath, tokens);
      const afterRestart = await get(`${b.base}/operations`, cookie);
      expect(afterRestart.status).toBe(200);
      expect(afterRestart.text).toContain('olivia');

      // The store never holds the cookie's value.
      const raw = openSqlite(dbPath);
      const rows = raw.prepare('SELECT * FROM idem_sessions').all();
      raw.close();
      expect(rows).toHaveLength(1);
      expect(JSON.stringify(rows)).not.toContain(cookie.split('=')[1] as string);
      expect(JSON.stringify(rows)).not.toContain(OPERATOR_TOKEN);

      // Signing out on one instance signs out on all.
      const out = await post(`${b.base}/logout`, cookie, { csrf });
      expect(out.status).toBe(303);
      expect((await get(`${a.base}/`, cookie)).location).toBe('/console/login');
      expect((await get(`${b.base}/`, cookie)).location).toBe('/console/login');

      // A token taken out of the tokens file ends its sessions on every instance.
      const again = await post(`${a.base}/login`, '', { token: OPERATOR_TOKEN });
      const second = (again.headers.get('set-cookie') ?? '').split(';')[0] as string;
      expect((await get(`${b.base}/`, second)).status).toBe(200);
      writeFileSync(
        tokens,
        JSON.stringify({ 'another-operator-token-0123456789': { principal: 'bob', role: 'operator' } }),
      );
      expect((await get(`${b.base}/`, second)).location).toBe('/console/login');
      expect((await get(`${a.base}/`, second)).location).toBe('/console/login');
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});
