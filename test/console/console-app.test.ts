import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../packages/idem/src/core/logger.js';
import { consoleApp } from '../../packages/idem-cli/src/console/console-app.js';
import { hostOriginPolicy } from '../../packages/idem-cli/src/server/host-origin-policy.js';
import { TokenRegistry } from '../../packages/idem-cli/src/server/token-registry.js';
import { authenticateRequest } from '../../packages/idem-cli/src/server/authenticate-request.js';
import { escapeHtml, html } from '../../packages/idem-cli/src/console/html.js';
import { cleanup, makeTempDir } from '../helpers/mcp-fixtures.js';
import {
  durableExecutor,
  openTestStore,
  startDurable,
  type SqliteTestStore,
} from '../helpers/store-fixtures.js';
import { makeDeadLetter, makeOutcomeUnknown } from './console-fixtures.js';
import type { IncomingMessage } from 'node:http';
import type { OAuthTokenVerifier } from '@modelcontextprotocol/server';
import { jwtVerifier } from '../../packages/idem/src/mcp/oauth/jwt-verifier.js';
import { TestIssuer } from '../helpers/test-issuer.js';

const TOOL_TOKEN = 'tool-token-0123456789abcdef';
const OPERATOR_TOKEN = 'operator-token-0123456789abcdef';

let dir: string;
let t: SqliteTestStore;
let server: Server | undefined;

beforeAll(() => {
  dir = makeTempDir('idem-console-app-');
});
afterAll(cleanup);
afterEach(async () => {
  await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  server = undefined;
  await t?.close();
});

/** A console on an ephemeral loopback port; `tokens` makes it ask for credentials. */
async function startConsole(tokens?: boolean, jwt?: OAuthTokenVerifier): Promise<string> {
  t = openTestStore({ path: join(dir, `db-${Math.random().toString(36).slice(2)}.sqlite`) });
  let registry: TokenRegistry | undefined;
  if (tokens === true) {
    const file = join(dir, `tokens-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(
      file,
      JSON.stringify({
        [TOOL_TOKEN]: { principal: 'agent', workspaces: ['ws-1'] },
        [OPERATOR_TOKEN]: { principal: 'olivia', role: 'operator' },
      }),
    );
    registry = TokenRegistry.fromFile(file);
  }
  const handler = consoleApp({
    store: t.store,
    prefix: '/console',
    policy: hostOriginPolicy({ bindHost: '127.0.0.1' }),
    credentials: { ...(registry === undefined ? {} : { registry }), ...(jwt === undefined ? {} : { jwt }) },
    ...(registry === undefined && jwt === undefined ? { devPrincipal: 'devop' } : {}),
    secureCookies: false,
    retentionMs: 60_000,
    logger: silentLogger,
  });
  server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server?.address() as AddressInfo).port}/console`;
}

async function request(url: string, init: RequestInit & { form?: Record<string, string> } = {}) {
  const { form, ...rest } = init;
  const response = await fetch(url, {
    redirect: 'manual',
    ...rest,
    ...(form === undefined
      ? {}
      : {
          method: 'POST',
          body: new URLSearchParams(form).toString(),
          headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...(rest.headers as object) },
        }),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** The status of a GET with exactly these headers (fetch would not send a Host of ours). */
function rawStatus(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

function csrfOf(page: string): string {
  const match = /name="csrf" value="([^"]+)"/.exec(page);
  if (match === null) throw new Error('no csrf field on the page');
  return match[1] as string;
}

function cookieOf(headers: Headers): string {
  const cookie = headers.get('set-cookie');
  if (cookie === null) throw new Error('no cookie set');
  return cookie.split(';')[0] as string;
}

async function outcomeUnknown(key: string) {
  const op = await startDurable(durableExecutor(t.store), { key });
  return makeOutcomeUnknown(t.store, op.operationId);
}

describe('the console handler', () => {
  it('dev mode: pages without sign-in, a banner, and POSTs only with the session CSRF token', async () => {
    const base = await startConsole();
    const op = await outcomeUnknown('k-dev');
    const overview = await request(`${base}/`);
    expect(overview.status).toBe(200);
    expect(overview.text).toContain('Loopback dev mode');
    expect(overview.text).toContain(op.operationId);
    const cookie = cookieOf(overview.headers);
    expect(overview.headers.get('set-cookie')).toMatch(/HttpOnly; SameSite=Strict/);
    expect(overview.headers.get('content-security-policy')).toContain("default-src 'none'");

    const action = `${base}/operations/${op.operationId}/resolve`;
    const form = { to: 'succeeded', resource_id: 'dep_1', reason: 'seen at the provider' };
    const noToken = await request(action, { form, headers: { cookie } });
    expect(noToken.status).toBe(403);
    expect(noToken.text).toContain('CSRF');
    const wrong = await request(action, { form: { ...form, csrf: 'x'.repeat(43) }, headers: { cookie } });
    expect(wrong.status).toBe(403);
    expect((await t.store.ledger.get(op.operationId))?.status).toBe('outcome_unknown');

    const page = await request(`${base}/operations/${op.operationId}`, { headers: { cookie } });
    const done = await request(action, { form: { ...form, csrf: csrfOf(page.text) }, headers: { cookie } });
    expect(done.status).toBe(303);
    const after = await t.store.ledger.get(op.operationId);
    expect(after).toMatchObject({ status: 'succeeded', resourceId: 'dep_1', resolvedBy: 'devop' });
    expect(after?.audit?.[0]).toMatchObject({
      action: 'resolve',
      by: 'devop',
      reason: 'seen at the provider',
    });
    expect(after?.result).toMatchObject({ deployment_id: 'dep_1', service: 'api' });
  });

  it('refuses a Host or Origin that is not allowed, as /mcp does', async () => {
    const base = await startConsole();
    expect(await rawStatus(`${base}/`, { Host: 'evil.example' })).toBe(403);
    expect(await rawStatus(`${base}/`, { Origin: 'http://evil.example' })).toBe(403);
    expect(await rawStatus(`${base}/`, { Host: `127.0.0.1:${new URL(base).port}` })).toBe(200);
  });

  it('with tokens: no page without sign-in, a tool token is refused, an operator token signs in', async () => {
    const base = await startConsole(true);
    const op = await outcomeUnknown('k-auth');
    const anonymous = await request(`${base}/`);
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get('location')).toBe('/console/login');
    expect(anonymous.text).not.toContain(op.operationId);
    const page = await request(`${base}/operations/${op.operationId}`);
    expect(page.status).toBe(303);
    const post = await request(`${base}/operations/${op.operationId}/resolve`, {
      form: { to: 'failed', reason: 'x', csrf: 'y' },
    });
    expect(post.status).toBe(401);

    const tool = await request(`${base}/login`, { form: { token: TOOL_TOKEN } });
    expect(tool.status).toBe(401);
    expect(tool.text).toContain('tool access, not the console');
    expect(tool.headers.get('set-cookie')).toBeNull();
    const unknown = await request(`${base}/login`, { form: { token: 'nope-nope-nope-nope' } });
    expect(unknown.status).toBe(401);

    const signedIn = await request(`${base}/login`, { form: { token: OPERATOR_TOKEN } });
    expect(signedIn.status).toBe(303);
    const cookie = cookieOf(signedIn.headers);
    const shown = await request(`${base}/operations/${op.operationId}`, { headers: { cookie } });
    expect(shown.status).toBe(200);
    expect(shown.text).toContain('Signed in as <b>olivia</b>');
    expect(shown.text).toContain(`idem-${op.operationId}`);
    expect(shown.text).not.toContain(OPERATOR_TOKEN);

    const failed = await request(`${base}/operations/${op.operationId}/resolve`, {
      form: { to: 'failed', reason: 'the provider has no such deployment', csrf: csrfOf(shown.text) },
      headers: { cookie },
    });
    expect(failed.status).toBe(303);
    expect(await t.store.ledger.get(op.operationId)).toMatchObject({
      status: 'failed',
      resolvedBy: 'olivia',
    });

    const again = await request(`${base}/operations/${op.operationId}/resolve`, {
      form: { to: 'failed', reason: 'twice', csrf: csrfOf(shown.text) },
      headers: { cookie },
    });
    expect(again.status).toBe(409);
    expect(again.text).toContain('Use Correct instead.');
  });

  it('requests a cancel and requeues a dead letter, each with a reason', async () => {
    const base = await startConsole();
    const op = await startDurable(durableExecutor(t.store), { key: 'k-cancel' });
    const deadId = await makeDeadLetter(t, 'dl-1');
    const page = await request(`${base}/operations/${op.operationId}`);
    const cookie = cookieOf(page.headers);
    const csrf = csrfOf(page.text);
    const noReason = await request(`${base}/operations/${op.operationId}/cancel`, {
      form: { reason: ' ', csrf },
      headers: { cookie },
    });
    expect(noReason.status).toBe(400);
    const cancel = await request(`${base}/operations/${op.operationId}/cancel`, {
      form: { reason: 'wrong version', csrf },
      headers: { cookie },
    });
    expect(cancel.status).toBe(303);
    const after = await t.store.ledger.get(op.operationId);
    expect(after?.status).toBe('cancel_requested');
    expect(after?.audit).toMatchObject([
      { action: 'cancel', by: 'devop', from: 'accepted', to: 'cancel_requested', reason: 'wrong version' },
    ]);

    const letters = await request(`${base}/dead-letters`, { headers: { cookie } });
    expect(letters.text).toContain(`note-created:dl-1`);
    expect(letters.text).not.toContain('never-shown');
    const requeued = await request(`${base}/dead-letters/${deadId}/requeue`, {
      form: { reason: 'the receiver is back', csrf },
      headers: { cookie },
    });
    expect(requeued.status).toBe(303);
    expect(await t.store.outbox.deadLetters()).toEqual([]);
  });

  it('lists with filters and pages with a cursor', async () => {
    const base = await startConsole();
    for (let i = 0; i < 55; i++) await startDurable(durableExecutor(t.store), { key: `k-${i}` });
    await startDurable(durableExecutor(t.store), { key: 'other', workspace: 'ws-2' });
    const first = await request(`${base}/operations?state=accepted&workspace=ws-1`);
    expect(first.status).toBe(200);
    expect(first.text).not.toContain('ws-2');
    const next = /href="([^"]*after=[^"]+)"/.exec(first.text)?.[1];
    expect(next).toBeDefined();
    const second = await request(
      `http://127.0.0.1:${new URL(base).port}${(next as string).replaceAll('&amp;', '&')}`,
    );
    expect(second.text).toContain('End of list.');
    const rowsOf = (text: string) => text.match(/class="id" href=/g)?.length ?? 0;
    expect(rowsOf(first.text) + rowsOf(second.text)).toBe(55);
  });
});

describe('operator credentials', () => {
  it('a JWT with the scope idem:operator signs in as its principal; without the scope it is refused', async () => {
    const issuer = await TestIssuer.start();
    try {
      const audience = 'http://127.0.0.1/console';
      const verifier = jwtVerifier({ issuer: issuer.issuer, jwksUrl: issuer.jwksUrl, audience });
      const base = await startConsole(false, verifier);
      const anonymous = await request(`${base}/`);
      expect(anonymous.status).toBe(303);
      const tools = await issuer.sign({ sub: 'agent', scope: 'tools', workspaces: ['ws-1'] }, audience);
      const refused = await request(`${base}/login`, { form: { token: tools } });
      expect(refused.status).toBe(401);
      expect(refused.text).toContain('lacks the scope idem:operator');
      const foreign = await issuer.sign(
        { sub: 'oscar', scope: 'idem:operator', workspaces: ['ops'] },
        'http://elsewhere/',
      );
      expect((await request(`${base}/login`, { form: { token: foreign } })).status).toBe(401);
      const operator = await issuer.sign(
        { sub: 'oscar', scope: 'idem:operator', workspaces: ['ops'] },
        audience,
      );
      const signedIn = await request(`${base}/login`, { form: { token: operator } });
      expect(signedIn.status).toBe(303);
      const page = await request(`${base}/`, { headers: { cookie: cookieOf(signedIn.headers) } });
      expect(page.status).toBe(200);
      expect(page.text).toContain('Signed in as <b>oscar</b>');
    } finally {
      await issuer.close();
    }
  });

  it('an operator token calls no tool: /mcp refuses it', async () => {
    const file = join(makeTempDir('idem-console-tokens-'), 'tokens.json');
    writeFileSync(
      file,
      JSON.stringify({
        [TOOL_TOKEN]: { principal: 'agent', workspaces: ['ws-1'] },
        [OPERATOR_TOKEN]: { principal: 'olivia', role: 'operator' },
      }),
    );
    const registry = TokenRegistry.fromFile(file);
    const req = (token: string) => ({ headers: { authorization: `Bearer ${token}` } }) as IncomingMessage;
    expect((await authenticateRequest(req(TOOL_TOKEN), { registry })).ok).toBe(true);
    const refused = await authenticateRequest(req(OPERATOR_TOKEN), { registry });
    expect(refused).toMatchObject({ ok: false, reason: 'operator_token', reply: { status: 403 } });
    writeFileSync(file, JSON.stringify({ [OPERATOR_TOKEN]: { principal: 'o', role: 'admin' } }));
    expect(() => TokenRegistry.fromFile(file)).toThrow(/entry 1: role: must be "operator"/);
  });

  it('escapes every interpolated value', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
    expect(html`<p>${'<script>'}</p>`.text).toBe('<p>&lt;script&gt;</p>');
  });
});
