import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../packages/idem/src/core/logger.js';
import { consoleApp } from '../../packages/idem-cli/src/console/console-app.js';
import { hostOriginPolicy } from '../../packages/idem-cli/src/server/host-origin-policy.js';
import { runCli } from '../helpers/durable-fixtures.js';
import { cleanup, ensureBuilt, makeTempDir } from '../helpers/mcp-fixtures.js';
import { durableExecutor, openTestStore, startDurable } from '../helpers/store-fixtures.js';
import { makeOutcomeUnknown } from './console-fixtures.js';

/**
 * A durable operation's arguments are a caller's private input: the console's pages and
 * `idem ops show`/`list` show its identity, state, result and audit, never them. The values below
 * appear nowhere but in the arguments, so any page or output that prints them fails here.
 */
const CANARY_SERVICE = 'canary-service-7f3a91';
const CANARY_VERSION = 'canary-version-b20c44';
const ARGS = { service: CANARY_SERVICE, version: CANARY_VERSION };

let dir: string;
let dbPath: string;
let operationIds: string[];

beforeAll(async () => {
  ensureBuilt();
  dir = makeTempDir('idem-args-hidden-');
  dbPath = join(dir, 'ops.sqlite');
  const t = openTestStore({ path: dbPath });
  try {
    const executor = durableExecutor(t.store);
    const unknown = await startDurable(executor, { key: 'k-unknown', args: ARGS });
    await makeOutcomeUnknown(t.store, unknown.operationId);
    const accepted = await startDurable(executor, { key: 'k-accepted', args: ARGS });
    operationIds = [unknown.operationId, accepted.operationId];
    // The arguments are stored (the worker needs them): the test would prove nothing otherwise.
    const stored = await t.store.ledger.get(unknown.operationId);
    expect(JSON.stringify(stored?.args)).toContain(CANARY_SERVICE);
  } finally {
    await t.close();
  }
});

afterAll(cleanup);

function expectNoArguments(text: string): void {
  expect(text).not.toContain(CANARY_SERVICE);
  expect(text).not.toContain(CANARY_VERSION);
}

describe("a durable operation's arguments are never shown", () => {
  it('by idem ops show and idem ops list, in every format', async () => {
    for (const id of operationIds) {
      const show = await runCli(['ops', 'show', id, '--db', dbPath]);
      expect(show.code).toBe(0);
      expect(JSON.parse(show.stdout)).toMatchObject({ operation_id: id });
      expectNoArguments(show.stdout + show.stderr);
    }
    for (const format of [[], ['--json']]) {
      const list = await runCli(['ops', 'list', ...format, '--db', dbPath]);
      expect(list.code).toBe(0);
      for (const id of operationIds) expect(list.stdout).toContain(id);
      expectNoArguments(list.stdout + list.stderr);
    }
  });

  it("by the console's operation page, overview and list", async () => {
    const t = openTestStore({ path: dbPath });
    const handler = consoleApp({
      store: t.store,
      prefix: '/console',
      policy: hostOriginPolicy({ bindHost: '127.0.0.1' }),
      credentials: {},
      devPrincipal: 'devop',
      secureCookies: false,
      retentionMs: 60_000,
      logger: silentLogger,
    });
    const server: Server = createServer((req, res) => void handler(req, res));
    try {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/console`;
      const pages = [
        `${base}/`,
        `${base}/operations`,
        ...operationIds.map((id) => `${base}/operations/${encodeURIComponent(id)}`),
      ];
      for (const url of pages) {
        const response = await fetch(url);
        const text = await response.text();
        expect(response.status, url).toBe(200);
        expectNoArguments(text);
      }
      const page = await (await fetch(`${base}/operations/${operationIds[0] as string}`)).text();
      expect(page).toContain(operationIds[0]);
      expect(page).toContain('outcome_unknown');
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await t.close();
    }
  });
});
