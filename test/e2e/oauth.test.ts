import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OAuthError, verifyBearerToken } from '@modelcontextprotocol/server';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { jwtVerifier } from '../../packages/idem/src/mcp/oauth/jwt-verifier.js';
import { identityFromAuthInfo } from '../../packages/idem/src/mcp/idem-identity.js';
import {
  callTool,
  cleanup,
  closeQuietly,
  connectHttp,
  ensureBuilt,
  freePort,
  makeTempDir,
  startServerProcess,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';
import { MCP_HEADERS, rawRequest, rpc } from '../helpers/raw-http.js';
import { TestIssuer } from '../helpers/test-issuer.js';

// Issue 15 §2: `idem serve` as an OAuth 2.1 resource server. The tests run an issuer of their own
// (real ES256 keys, a JWKS endpoint on loopback) and sign real tokens.

let issuer: TestIssuer;
const tokens: string[] = [];
let servers: ServerProcess[] = [];

beforeAll(async () => {
  ensureBuilt();
  issuer = await TestIssuer.start();
});
afterEach(async () => {
  try {
    for (const srv of servers) {
      const stderr = srv.stderrLines().join('\n');
      for (const token of tokens) expect(stderr).not.toContain(token.split('.')[2]);
    }
  } finally {
    servers = [];
    await cleanup();
  }
});
afterAll(async () => {
  await issuer.close();
  await cleanup();
});

const SCOPE = 'mcp:tools';

async function jwtServer(extra: string[] = []): Promise<ServerProcess> {
  const port = await freePort();
  const srv = await startServerProcess({
    args: [
      '--db',
      join(makeTempDir(), 'db.sqlite'),
      '--port',
      String(port),
      '--jwt-issuer',
      issuer.issuer,
      '--jwt-jwks-url',
      issuer.jwksUrl,
      '--jwt-scope',
      SCOPE,
      ...extra,
    ],
  });
  servers.push(srv);
  return srv;
}

async function sign(audience: string, claims: Record<string, unknown> = {}, options = {}): Promise<string> {
  const token = await issuer.sign(
    { sub: 'alice', workspaces: ['default'], scope: `openid ${SCOPE}`, ...claims },
    audience,
    options,
  );
  tokens.push(token);
  return token;
}

function post(srv: ServerProcess, token: string | undefined, body = rpc('tools/list')) {
  return rawRequest({
    port: srv.port,
    headers: { ...MCP_HEADERS, ...(token === undefined ? {} : { Authorization: `Bearer ${token}` }) },
    body,
  });
}

describe('idem serve as an OAuth 2.1 resource server (JWT access tokens)', () => {
  it('publishes RFC 9728 metadata and names it in every 401 challenge', async () => {
    const srv = await jwtServer();
    const metadataUrl = `http://127.0.0.1:${srv.port}/.well-known/oauth-protected-resource/mcp`;
    for (const path of [
      '/.well-known/oauth-protected-resource/mcp',
      '/.well-known/oauth-protected-resource',
    ]) {
      const answer = await rawRequest({ port: srv.port, method: 'GET', path, headers: {} });
      expect(answer.status, path).toBe(200);
      expect(answer.json()).toEqual({
        resource: srv.url,
        authorization_servers: [issuer.issuer],
        scopes_supported: [SCOPE],
        bearer_methods_supported: ['header'],
        resource_name: 'Idem reference MCP server',
      });
    }
    const missing = await post(srv, undefined);
    expect(missing.status).toBe(401);
    expect(missing.headers['www-authenticate']).toContain(`resource_metadata="${metadataUrl}"`);
    expect(missing.json()).toMatchObject({ error: 'invalid_token' });
    expect(srv.logs().find((l) => l.event === 'idem.serving')?.resource_metadata).toBe(metadataUrl);
  });

  it('a valid token acts as its subject in its workspaces only', async () => {
    const srv = await jwtServer();
    const token = await sign(srv.url);
    const client = await connectHttp(srv.url, token);
    let operationId: unknown;
    try {
      const created = await callTool(client, 'create_note', {
        workspace: 'default',
        idempotency_key: 'k1',
        body: 'from a JWT',
      });
      expect(created.isError).toBe(false);
      const operation = await callTool(client, 'get_operation', { operation_id: created.sc.operation_id });
      expect(operation.isError).toBe(false);
      operationId = created.sc.operation_id;
      const elsewhere = await callTool(client, 'create_note', {
        workspace: 'team-b',
        idempotency_key: 'k2',
        body: 'x',
      });
      expect(elsewhere.sc.error).toMatchObject({ code: 'forbidden' });
    } finally {
      await closeQuietly(client);
    }
    // Another subject's token cannot read alice's operation.
    const bob = await sign(srv.url, { sub: 'bob' });
    const bobClient = await connectHttp(srv.url, bob);
    try {
      const foreign = await callTool(bobClient, 'get_operation', { operation_id: operationId });
      expect(foreign.sc.error).toMatchObject({ code: 'not_found' });
    } finally {
      await closeQuietly(bobClient);
    }
  });

  it('refuses expired, not-yet-valid, wrong-audience, wrong-issuer, tampered, unsigned-by-the-issuer and malformed tokens with 401', async () => {
    const srv = await jwtServer();
    const valid = await sign(srv.url);
    const [header, payload, signature] = valid.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const tampered = `${header}.${Buffer.from(JSON.stringify({ ...claims, sub: 'mallory' })).toString('base64url')}.${signature}`;
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${payload}.`;
    const foreign = await TestIssuer.newKey();
    const cases: [string, string, string][] = [
      ['expired', await sign(srv.url, {}, { expiresInSec: -3600 }), 'expired'],
      ['no exp', await sign(srv.url, {}, { expiresInSec: null }), 'exp claim'],
      ['not yet valid', await sign(srv.url, {}, { notBeforeSec: 3600 }), 'nbf claim'],
      ['wrong audience', await sign('https://other.example/mcp'), 'aud claim'],
      ['wrong issuer', await sign(srv.url, {}, { issuer: 'https://evil.example' }), 'iss claim'],
      ['tampered', tampered, 'signature'],
      ['alg none', unsigned, 'algorithm'],
      [
        'foreign key',
        await sign(srv.url, {}, { key: { ...foreign, kid: issuer.currentKey.kid } }),
        'signature',
      ],
      ['unknown kid', await sign(srv.url, {}, { key: foreign }), 'no signing key'],
      ['expired 10 s ago, beyond the 5 s of skew', await sign(srv.url, {}, { expiresInSec: -10 }), 'expired'],
      ['no subject', await sign(srv.url, { sub: undefined }), '"sub"'],
      // PostgreSQL would store both as mallory\uFFFD: one principal for two subjects.
      [
        'a subject with a lone surrogate',
        await sign(srv.url, { sub: 'mallory\ud800' }),
        '"sub" must be well-formed',
      ],
      ['a subject with U+0000', await sign(srv.url, { sub: 'mallory\u0000' }), '"sub" must not contain'],
      [
        'a workspace with a lone surrogate',
        await sign(srv.url, { workspaces: ['default\udfff'] }),
        '"workspaces": every workspace must be well-formed',
      ],
      ['workspaces not an array', await sign(srv.url, { workspaces: 'default' }), '"workspaces"'],
      ['not a JWT', 'opaque-token-that-is-no-jwt', 'not a valid'],
    ];
    tokens.push(tampered);
    for (const [name, token, described] of cases) {
      const answer = await post(srv, token);
      expect(answer.status, name).toBe(401);
      const challenge = String(answer.headers['www-authenticate']);
      expect(challenge, name).toMatch(/^Bearer error="invalid_token", error_description="[^"]*"/);
      expect((answer.json() as { error_description: string }).error_description, name).toContain(described);
      expect(challenge, name).toContain('resource_metadata="');
    }
    expect((await post(srv, valid)).status).toBe(200);
    const refusals = await srv.waitForLogs((l) => l.event === 'http.unauthorized', cases.length);
    expect(refusals).toHaveLength(cases.length);
    expect(refusals.every((l) => l.reason === 'invalid_token')).toBe(true);
  });

  it('refuses a token without the required scope with 403 insufficient_scope', async () => {
    const srv = await jwtServer();
    const answer = await post(srv, await sign(srv.url, { scope: 'openid' }));
    expect(answer.status).toBe(403);
    expect(answer.headers['www-authenticate']).toContain('error="insufficient_scope"');
    expect(answer.headers['www-authenticate']).toContain(`scope="${SCOPE}"`);
    // `scp` (an array, as some issuers write it) counts as well.
    expect((await post(srv, await sign(srv.url, { scope: undefined, scp: [SCOPE] }))).status).toBe(200);
  });

  it('answers 500 server_error, not 401, while the issuer keys cannot be fetched', async () => {
    const closedPort = await freePort();
    const srv = await jwtServer([]);
    const unreachable = await startServerProcess({
      args: [
        '--db',
        join(makeTempDir(), 'db.sqlite'),
        '--jwt-issuer',
        issuer.issuer,
        '--jwt-jwks-url',
        `http://127.0.0.1:${closedPort}/jwks`,
      ],
    });
    servers.push(unreachable);
    const answer = await post(unreachable, await sign(unreachable.url));
    expect(answer.status).toBe(500);
    expect(answer.json()).toMatchObject({ error: 'server_error' });
    expect((await post(srv, await sign(srv.url))).status).toBe(200);
  });

  it('takes tokens-file tokens and JWTs side by side', async () => {
    const dir = makeTempDir();
    const fileToken = `tok-${randomUUID()}`;
    tokens.push(fileToken);
    writeFileSync(
      join(dir, 'tokens.json'),
      JSON.stringify({ [fileToken]: { principal: 'ci', workspaces: ['default'] } }),
    );
    const srv = await jwtServer(['--tokens', join(dir, 'tokens.json')]);
    expect((await post(srv, fileToken)).status).toBe(200);
    expect((await post(srv, await sign(srv.url))).status).toBe(200);
    expect((await post(srv, `tok-${randomUUID()}`)).status).toBe(401);
  });
});

describe('idem serve: JWT clock skew over HTTP', () => {
  it('accepts a token whose exp passed 3 s ago (the README promises 5 s of skew)', async () => {
    const srv = await jwtServer();
    // A fractional exp exactly 3 s before now: the request has 2 s before it is out of the skew.
    const token = await sign(srv.url, {}, { expiresAtSec: Date.now() / 1000 - 3 });
    expect((await post(srv, token)).status).toBe(200);
  });
});

describe('jwtVerifier with the SDK verifyBearerToken', () => {
  const audience = 'https://idem.example/mcp';
  const verifyAt = async (nowSec: number, token: () => Promise<string>) => {
    // Only Date is faked: jose and the SDK read the same clock; timers (the JWKS fetch) stay real.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(nowSec * 1000);
      const verifier = jwtVerifier({ issuer: issuer.issuer, jwksUrl: issuer.jwksUrl, audience });
      const signed = await token();
      return await verifyBearerToken(`Bearer ${signed}`, {
        verifier,
        expectedResource: new URL(audience),
      }).catch((error: unknown) => error);
    } finally {
      vi.useRealTimers();
    }
  };
  const now = Math.floor(Date.now() / 1000);

  it.each([
    ['exp 3 s past', { expiresInSec: -3 }],
    ['exp 4 s past', { expiresInSec: -4 }],
    ['nbf 3 s ahead', { notBeforeSec: 3 }],
    ['nbf 5 s ahead', { notBeforeSec: 5 }],
  ])('accepts %s: 5 s of clock skew hold through the SDK check', async (_l, options) => {
    const auth = await verifyAt(now, () => sign(audience, {}, options));
    expect(auth).not.toBeInstanceOf(Error);
    expect(auth).toMatchObject({ clientId: 'alice' });
  });

  it.each([
    ['exp 10 s past', { expiresInSec: -10 }, 'the token has expired'],
    ['exp 6 s past', { expiresInSec: -6 }, 'the token has expired'],
    ['nbf 10 s ahead', { notBeforeSec: 10 }, "the token's nbf claim is invalid"],
  ])('refuses %s as invalid_token (401)', async (_l, options, message) => {
    const refused = await verifyAt(now, () => sign(audience, {}, options));
    expect(refused).toBeInstanceOf(OAuthError);
    expect(refused).toMatchObject({ code: 'invalid_token', message });
  });

  it('reports expiresAt as exp plus the skew, and honours clockToleranceSec', async () => {
    const auth = await verifyAt(now, () => sign(audience, {}, { expiresInSec: 60 }));
    expect(auth).toMatchObject({ expiresAt: now + 65 });
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(now * 1000);
      const strict = jwtVerifier({
        issuer: issuer.issuer,
        jwksUrl: issuer.jwksUrl,
        audience,
        clockToleranceSec: 0,
      });
      const token = await sign(audience, {}, { expiresInSec: -1 });
      await expect(verifyBearerToken(`Bearer ${token}`, { verifier: strict })).rejects.toMatchObject({
        code: 'invalid_token',
      });
    } finally {
      vi.useRealTimers();
    }
    expect(() =>
      jwtVerifier({
        issuer: issuer.issuer,
        audience,
        keys: async () => Promise.reject(new Error()),
        clockToleranceSec: -1,
      }),
    ).toThrow(/clockToleranceSec/);
  });

  it('refuses a subject or workspace with U+0000 or a lone surrogate as invalid_token', async () => {
    const verifier = jwtVerifier({ issuer: issuer.issuer, jwksUrl: issuer.jwksUrl, audience });
    for (const claims of [
      { sub: 'mallory\ud800' },
      { sub: 'mallory\udfff' },
      { sub: 'mallory\u0000' },
      { workspaces: ['ws\ud800'] },
      { workspaces: ['ws\u0000'] },
    ]) {
      const refused = await verifyBearerToken(`Bearer ${await sign(audience, claims)}`, { verifier }).catch(
        (error: unknown) => error,
      );
      expect(refused, JSON.stringify(claims)).toBeInstanceOf(OAuthError);
      expect(refused).toMatchObject({ code: 'invalid_token' });
    }
    const emoji = await verifyBearerToken(`Bearer ${await sign(audience, { sub: 'mallory\ud83d\ude00' })}`, {
      verifier,
    });
    expect(identityFromAuthInfo(emoji)?.principal).toBe('mallory\ud83d\ude00');
  });

  it('follows a key rotation: the new key is fetched on its first token, the retired one is refused', async () => {
    const verifier = jwtVerifier({
      issuer: issuer.issuer,
      jwksUrl: issuer.jwksUrl,
      audience,
      jwksCooldownMs: 0,
    });
    const options = { verifier, requiredScopes: [SCOPE], expectedResource: new URL(audience) };
    const before = await sign(audience, { workspaces: ['a', 'b'] });
    const auth = await verifyBearerToken(`Bearer ${before}`, options);
    expect(identityFromAuthInfo(auth)).toEqual({ principal: 'alice', workspaces: ['a', 'b'] });
    expect(auth).toMatchObject({ clientId: 'alice', resource: new URL(audience), scopes: ['openid', SCOPE] });
    const fetched = issuer.jwksRequests;
    const retired = await issuer.rotate();
    const after = await sign(audience);
    await expect(verifyBearerToken(`Bearer ${after}`, options)).resolves.toMatchObject({ clientId: 'alice' });
    expect(issuer.jwksRequests).toBe(fetched + 1);
    const old = await sign(audience, {}, { key: retired });
    const refused = await verifyBearerToken(`Bearer ${old}`, options).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OAuthError);
    expect(refused).toMatchObject({ code: 'invalid_token' });
  });
});
