import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  REPO_ROOT,
  callTool,
  cleanup,
  closeQuietly,
  connectHttp,
  ensureBuilt,
  makeTempDir,
  startServerProcess,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import { POSTGRES_URL, postgresAvailable } from '../helpers/postgres-fixtures.js';
import { killOldestMessage, makeOutcomeUnknown, openServerStore } from './console-fixtures.js';

// The operator console driven as an operator would, in Debian's Chromium (headless), against the
// built CLI's `idem serve --console`, on SQLite and on PostgreSQL.

const TOOL_TOKEN = `tool-${randomUUID()}`;
const OPERATOR_TOKEN = `operator-${randomUUID()}`;
const CHROMIUM = process.env.IDEM_CHROMIUM ?? '/usr/bin/chromium';
/** Set to write docs/images/console-*.png from the SQLite run. */
const SCREENSHOTS = process.env.IDEM_CONSOLE_SCREENSHOTS === '1';

const engines = postgresAvailable ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);

let browser: Browser;
let dir: string;

beforeAll(async () => {
  ensureBuilt();
  dir = makeTempDir('idem-console-browser-');
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-gpu'],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await cleanup();
});

async function shoot(page: Page, name: string, engine: string): Promise<void> {
  if (!SCREENSHOTS || engine !== 'sqlite') return;
  const out = join(REPO_ROOT, 'docs', 'images');
  mkdirSync(out, { recursive: true });
  await page.screenshot({ path: join(out, `console-${name}.png`), fullPage: true });
}

describe.each(engines)('the operator console in Chromium on %s', (engine) => {
  let server: ServerProcess;
  let store: { store: IdemStore; close(): Promise<void> };
  let consoleUrl: string;

  beforeAll(async () => {
    const tokens = join(dir, `tokens-${engine}.json`);
    writeFileSync(
      tokens,
      JSON.stringify({
        [TOOL_TOKEN]: { principal: 'agent', workspaces: ['default'] },
        [OPERATOR_TOKEN]: { principal: 'olivia', role: 'operator' },
      }),
    );
    const db = join(dir, 'console.sqlite');
    const schema = `idem_console_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const dbArgs = engine === 'sqlite' ? ['--db', db] : ['--db', POSTGRES_URL, '--db-schema', schema];
    server = await startServerProcess({
      args: [...dbArgs, '--console', '--no-worker', '--tokens', tokens],
      readyTimeoutMs: 30_000,
    });
    store = await openServerStore(
      engine === 'sqlite' ? { kind: 'sqlite', path: db } : { kind: 'postgres', schema },
    );
    consoleUrl = server.url.replace(/\/mcp$/, '/console/');
  }, 60_000);

  afterAll(async () => {
    await server?.kill('SIGTERM');
    await store?.close();
  });

  it('refuses every page and action without an operator credential', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(consoleUrl);
      expect(new URL(page.url()).pathname).toBe('/console/login');
      await expect(page.getByRole('heading', { name: 'Sign in' }).isVisible()).resolves.toBe(true);
      await page.getByLabel('Operator token').fill(TOOL_TOKEN);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect(page.getByRole('alert').textContent()).resolves.toContain('tool access, not the console');
      await shoot(page, 'sign-in', engine);
      const posted = await page.request.post(`${consoleUrl}dead-letters/1/requeue`, {
        form: { reason: 'x', csrf: 'x' },
        maxRedirects: 0,
      });
      expect(posted.status()).toBe(401);
    } finally {
      await context.close();
    }
  }, 60_000);

  it('finds an outcome_unknown operation, resolves it, and the replay returns the settled result', async () => {
    const client = await connectHttp(server.url, TOOL_TOKEN);
    const args = {
      idempotency_key: `deploy-${engine}`,
      workspace: 'default',
      service: 'api',
      version: '2.0.0',
    };
    const context = await browser.newContext();
    try {
      const first = await callTool(client, 'start_deployment', args);
      expect(first.sc.status).toBe('accepted');
      const id = first.sc.operation_id as string;
      await makeOutcomeUnknown(store.store, id);
      const unknown = await callTool(client, 'start_deployment', args);
      expect(unknown.sc).toMatchObject({ status: 'outcome_unknown', replayed: true });

      const page = await context.newPage();
      await page.goto(consoleUrl);
      await page.getByLabel('Operator token').fill(OPERATOR_TOKEN);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      await expect(page.getByText('Signed in as').textContent()).resolves.toContain('olivia');
      await shoot(page, 'overview', engine);

      await page.getByRole('link', { name: id }).first().click();
      await expect(page.locator('#operation-id').textContent()).resolves.toBe(id);
      await expect(page.getByText(`idem-${id}`).count()).resolves.toBeGreaterThan(0);
      await shoot(page, 'operation', engine);
      const resolve = page.locator('form', {
        has: page.getByRole('button', { name: 'Resolve', exact: true }),
      });
      await resolve.getByLabel('Resource id').fill('dep_from_browser');
      await resolve.getByLabel('Reason').fill('the provider lists dep_from_browser with our key');
      await resolve.getByRole('button', { name: 'Resolve', exact: true }).click();
      await expect(page.getByRole('status').last().textContent()).resolves.toContain('Resolved');
      await expect(page.locator('.facts .state').textContent()).resolves.toBe('succeeded');
      await expect(page.getByText('resolve by olivia').count()).resolves.toBe(1);

      const replay = await callTool(client, 'start_deployment', args);
      expect(replay.isError).toBe(false);
      expect(replay.sc).toMatchObject({
        status: 'succeeded',
        operation_id: id,
        resource_id: 'dep_from_browser',
        deployment_id: 'dep_from_browser',
        replayed: true,
      });

      await page.goto(`${consoleUrl}operations?state=succeeded`);
      await expect(page.getByRole('link', { name: id }).count()).resolves.toBe(1);
      await shoot(page, 'list', engine);
    } finally {
      await context.close();
      await closeQuietly(client);
    }
  }, 90_000);

  it('requeues a dead letter', async () => {
    const client = await connectHttp(server.url, TOOL_TOKEN);
    const note = await callTool(client, 'create_note', {
      idempotency_key: `note-${engine}`,
      workspace: 'default',
      body: 'hello',
      notify: true,
    }).finally(() => closeQuietly(client));
    expect(note.isError).toBe(false);
    const deadId = await killOldestMessage(store.store);
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${consoleUrl}login`);
      await page.getByLabel('Operator token').fill(OPERATOR_TOKEN);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      await page.getByRole('link', { name: 'Dead letters' }).click();
      const row = page.locator('tr', { has: page.getByText(String(deadId), { exact: true }) });
      await shoot(page, 'dead-letters', engine);
      await row.getByLabel('Reason').fill('the receiver is back');
      await row.getByRole('button', { name: `Requeue dead letter ${deadId}` }).click();
      await expect(page.getByRole('status').last().textContent()).resolves.toContain('Requeued');
      expect(await store.store.outbox.deadLetters()).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
