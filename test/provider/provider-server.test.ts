import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startProvider } from '../../packages/idem-cli/src/provider/index.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import {
  deployments,
  get,
  post,
  provider,
  requestWithHost,
  tempDir,
  type DeploymentJson,
} from './provider-fixtures.js';

const app = { service: 'billing', version: '1.4.2' };

describe('provider basics', () => {
  it('reports health and its mode', async () => {
    for (const mode of ['key', 'reference', 'none'] as const) {
      const p = await provider({ mode });
      const health = await get(p.url, '/health');
      expect(health.status).toBe(200);
      expect(health.body).toEqual({ ok: true, mode });
      expect(p.url).toBe(`http://127.0.0.1:${p.port}`);
    }
  });

  it('creates a deployment and serves it by id', async () => {
    const p = await provider({ mode: 'none' });
    const created = await post(p.url, '/deployments', app);
    expect(created.status).toBe(201);
    expect(created.headers.get('content-type')).toMatch(/^application\/json/);
    const deployment = created.body as unknown as DeploymentJson;
    expect(deployment).toEqual({
      deployment_id: expect.stringMatching(/^dep_[0-9a-f]{32}$/),
      service: 'billing',
      version: '1.4.2',
      status: 'deployed',
      created_at: expect.any(String),
    });
    expect(new Date(deployment.created_at).toISOString()).toBe(deployment.created_at);

    const fetched = await get(p.url, `/deployments/${deployment.deployment_id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual(deployment);
    expect((await get(p.url, '/deployments/dep_missing')).status).toBe(404);
    expect((await get(p.url, '/deployments/%E0%A4%A')).status).toBe(404);
    expect(await deployments(p.url)).toEqual([deployment]);
  });

  it('rejects invalid bodies with 422 and creates nothing', async () => {
    const p = await provider({ mode: 'key' });
    const invalid: unknown[] = [
      { service: 'billing' },
      { service: '', version: '1' },
      { service: 'x'.repeat(101), version: '1' },
      { service: 'billing', version: 1 },
      { service: 'billing', version: '1', client_reference: 'r'.repeat(201) },
      { service: 'billing', version: '1', extra: true },
      [app],
      'just a string',
    ];
    for (const body of invalid) {
      const response = await post(p.url, '/deployments', JSON.stringify(body), { 'Idempotency-Key': 'k' });
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.body.error).toBe('invalid_request');
      expect(response.body.message).toEqual(expect.any(String));
    }
    // None of those consumed the key: it still creates.
    expect((await post(p.url, '/deployments', app, { 'Idempotency-Key': 'k' })).status).toBe(201);
    expect(await deployments(p.url)).toHaveLength(1);
  });

  it('answers 400 to bad JSON, 413 to bodies over 64 KiB, 404 and 405 to unknown routes', async () => {
    const p = await provider({ mode: 'none' });
    const badJson = await post(p.url, '/deployments', '{"service": ');
    expect(badJson.status).toBe(400);
    expect(badJson.body.error).toBe('invalid_json');
    expect((await post(p.url, '/deployments', '')).status).toBe(400);

    const big = { ...app, client_reference: 'x', padding: 'p'.repeat(64 * 1024) };
    const tooLarge = await post(p.url, '/deployments', big);
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body.error).toBe('payload_too_large');
    expect((await post(p.url, '/webhooks', big, { 'Idempotency-Key': 'w' })).status).toBe(413);

    expect((await get(p.url, '/nope')).status).toBe(404);
    expect((await get(p.url, '/deployments/a/b')).status).toBe(404);
    const wrongMethod = await fetch(`${p.url}/deployments`, { method: 'PUT', body: '{}' });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('GET, POST');
    expect(await deployments(p.url)).toHaveLength(0);
  });

  it('refuses forbidden-* with 403 and invalid-* with 422 in every mode, applying nothing', async () => {
    for (const mode of ['key', 'reference', 'none'] as const) {
      const p = await provider({ mode });
      const forbidden = await post(
        p.url,
        '/deployments',
        { service: 'forbidden-payments', version: '1', client_reference: 'r1' },
        { 'Idempotency-Key': 'k1' },
      );
      expect(forbidden.status).toBe(403);
      expect(forbidden.body.error).toBe('forbidden');
      const invalid = await post(
        p.url,
        '/deployments',
        { service: 'invalid-payments', version: '1' },
        { 'Idempotency-Key': 'k2' },
      );
      expect(invalid.status).toBe(422);
      expect(invalid.body.error).toBe('invalid_request');
      expect(await deployments(p.url)).toHaveLength(0);
    }
  });

  it('answers 421 to a Host header that does not name it, before any route, applying nothing', async () => {
    const p = await provider({ mode: 'key', faultsEndpoint: true });
    for (const host of [
      `localhost:${p.port}`,
      `127.0.0.1:${p.port}`,
      `127.1.2.3:${p.port}`,
      `LOCALHOST:${p.port}`,
    ]) {
      expect((await requestWithHost(p.url, 'GET', '/health', host)).status, host).toBe(200);
    }
    const refused = [
      `evil.example:${p.port}`,
      'evil.example',
      `localhost.evil.example:${p.port}`,
      `127.0.0.1:${p.port + 1}`,
      `[::1]:${p.port + 1}`,
      '127.0.0.1',
      `127.0.0.1:${p.port}@evil.example`,
    ];
    for (const host of refused) {
      const answer = await requestWithHost(p.url, 'POST', '/deployments', host, app);
      expect(answer.status, String(host)).toBe(421);
      expect(answer.body).toMatchObject({ error: 'misdirected_request' });
      expect(String(answer.body.message)).toContain(`port ${p.port}`);
    }
    expect(
      (await requestWithHost(p.url, 'POST', '/_faults', `evil.example:${p.port}`, { kind: 'exit' })).status,
    ).toBe(421);
    // Without any Host header Node's HTTP server itself answers 400 (HTTP/1.1 requires one).
    expect((await requestWithHost(p.url, 'POST', '/deployments', undefined, app)).status).toBe(400);
    expect(p.faults.pending()).toEqual([]);
    expect(await deployments(p.url)).toHaveLength(0);
  });

  it('accepts its own bound host, [::1] among them', async (context) => {
    const p = await provider({ mode: 'none', host: '::1' }).catch((error: unknown) => {
      if (process.env.CI) throw error;
      context.skip(`no IPv6 loopback here: ${(error as Error).message}`);
      throw error;
    });
    expect(p.url).toBe(`http://[::1]:${p.port}`);
    expect((await requestWithHost(p.url, 'GET', '/health', `[::1]:${p.port}`)).status).toBe(200);
    expect((await get(p.url, '/health')).status).toBe(200);
    expect((await requestWithHost(p.url, 'GET', '/health', `[::2]:${p.port}`)).status).toBe(421);
  });

  it('listens on loopback only', async () => {
    await expect(startProvider({ mode: 'key', host: '0.0.0.0' })).rejects.toThrow(/loopback only/);
    await expect(startProvider({ mode: 'key', host: '192.168.1.10' })).rejects.toThrow(/loopback only/);
  });
});

describe('mode key', () => {
  it('replays the original response for the same key and body, creating nothing', async () => {
    const p = await provider({ mode: 'key' });
    const first = await post(p.url, '/deployments', app, { 'Idempotency-Key': 'deploy-1' });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();

    // Same request with its fields in another order: same canonical body.
    const again = await post(
      p.url,
      '/deployments',
      { version: '1.4.2', service: 'billing' },
      {
        'Idempotency-Key': 'deploy-1',
      },
    );
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    expect(again.body.deployment_id).toBe(first.body.deployment_id);
    expect(await deployments(p.url)).toHaveLength(1);
  });

  it('answers 422 idempotency_key_conflict to the same key with another body, creating nothing', async () => {
    const p = await provider({ mode: 'key' });
    await post(p.url, '/deployments', app, { 'Idempotency-Key': 'deploy-1' });
    const conflict = await post(
      p.url,
      '/deployments',
      { ...app, version: '2.0.0' },
      { 'Idempotency-Key': 'deploy-1' },
    );
    expect(conflict.status).toBe(422);
    expect(conflict.body.error).toBe('idempotency_key_conflict');
    const withReference = await post(
      p.url,
      '/deployments',
      { ...app, client_reference: 'r' },
      {
        'Idempotency-Key': 'deploy-1',
      },
    );
    expect(withReference.status).toBe(422);
    expect(await deployments(p.url)).toHaveLength(1);
  });

  it('creates a new deployment per request without a key, and per distinct key', async () => {
    const p = await provider({ mode: 'key' });
    await post(p.url, '/deployments', app);
    await post(p.url, '/deployments', app);
    await post(p.url, '/deployments', app, { 'Idempotency-Key': 'a' });
    await post(p.url, '/deployments', app, { 'Idempotency-Key': 'b' });
    const all = await deployments(p.url);
    expect(all).toHaveLength(4);
    expect(new Set(all.map((d) => d.deployment_id)).size).toBe(4);
  });

  it('rejects keys that are empty or longer than 255 characters with 400', async () => {
    const p = await provider({ mode: 'key' });
    for (const key of ['', 'k'.repeat(256)]) {
      const response = await post(p.url, '/deployments', app, { 'Idempotency-Key': key });
      expect(response.status).toBe(400);
      expect(response.body.error).toBe('invalid_idempotency_key');
    }
    expect((await post(p.url, '/deployments', app, { 'Idempotency-Key': 'k'.repeat(255) })).status).toBe(201);
    expect(await deployments(p.url)).toHaveLength(1);
  });

  it('does not record a key for a refused request', async () => {
    const p = await provider({ mode: 'key' });
    const refused = await post(
      p.url,
      '/deployments',
      { service: 'forbidden-x', version: '1' },
      {
        'Idempotency-Key': 'k',
      },
    );
    expect(refused.status).toBe(403);
    const created = await post(p.url, '/deployments', app, { 'Idempotency-Key': 'k' });
    expect(created.status).toBe(201);
    expect(created.headers.get('idempotent-replayed')).toBeNull();
  });

  it('forgets a key keyRetentionMs after its first use', async () => {
    const clock = new FakeClock();
    const p = await provider({ mode: 'key', clock, keyRetentionMs: 60_000 });
    const first = await post(p.url, '/deployments', app, { 'Idempotency-Key': 'k' });
    clock.advance(59_999);
    const replay = await post(p.url, '/deployments', app, { 'Idempotency-Key': 'k' });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.deployment_id).toBe(first.body.deployment_id);

    clock.advance(1); // retention is counted from the first use, not refreshed by the replay
    const fresh = await post(p.url, '/deployments', { ...app, version: '9' }, { 'Idempotency-Key': 'k' });
    expect(fresh.status).toBe(201);
    expect(fresh.headers.get('idempotent-replayed')).toBeNull();
    expect(fresh.body.deployment_id).not.toBe(first.body.deployment_id);
    expect(await deployments(p.url)).toHaveLength(2);
  });

  it('does not store or search client_reference', async () => {
    const p = await provider({ mode: 'key' });
    const created = await post(p.url, '/deployments', { ...app, client_reference: 'ref-1' });
    expect(created.body.client_reference).toBeUndefined();
    const search = await get(p.url, '/deployments?client_reference=ref-1');
    expect(search.status).toBe(400);
    expect(search.body.error).toBe('unsupported');
  });
});

describe('mode reference', () => {
  it('stores client_reference and finds deployments by it, without deduplicating', async () => {
    const p = await provider({ mode: 'reference' });
    const a1 = await post(p.url, '/deployments', { ...app, client_reference: 'op-a' });
    const a2 = await post(p.url, '/deployments', { ...app, client_reference: 'op-a' });
    const b = await post(p.url, '/deployments', { ...app, client_reference: 'op-b' });
    await post(p.url, '/deployments', app);
    expect([a1.status, a2.status, b.status]).toEqual([201, 201, 201]);
    expect(a1.body.client_reference).toBe('op-a');
    expect(a2.body.deployment_id).not.toBe(a1.body.deployment_id);

    const found = await get(p.url, '/deployments?client_reference=op-a');
    expect(found.status).toBe(200);
    expect(found.body).toEqual({ deployments: [a1.body, a2.body] });
    expect((await get(p.url, '/deployments?client_reference=op-b')).body).toEqual({ deployments: [b.body] });
    expect((await get(p.url, '/deployments?client_reference=op-c')).body).toEqual({ deployments: [] });
    expect((await get(p.url, '/deployments?client_reference=')).status).toBe(400);
    expect(await deployments(p.url)).toHaveLength(4);
  });

  it('ignores the Idempotency-Key header', async () => {
    const p = await provider({ mode: 'reference' });
    const first = await post(p.url, '/deployments', app, { 'Idempotency-Key': 'k' });
    const second = await post(p.url, '/deployments', app, { 'Idempotency-Key': 'k' });
    const other = await post(p.url, '/deployments', { ...app, version: '2' }, { 'Idempotency-Key': 'k' });
    expect([first.status, second.status, other.status]).toEqual([201, 201, 201]);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect(await deployments(p.url)).toHaveLength(3);
  });
});

describe('mode none', () => {
  it('ignores both the Idempotency-Key header and client_reference', async () => {
    const p = await provider({ mode: 'none' });
    const body = { ...app, client_reference: 'op-a' };
    const first = await post(p.url, '/deployments', body, { 'Idempotency-Key': 'k' });
    const second = await post(p.url, '/deployments', body, { 'Idempotency-Key': 'k' });
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect(first.body.client_reference).toBeUndefined();
    expect(second.body.deployment_id).not.toBe(first.body.deployment_id);
    const search = await get(p.url, '/deployments?client_reference=op-a');
    expect(search.status).toBe(400);
    expect(search.body.error).toBe('unsupported');
    expect(await deployments(p.url)).toHaveLength(2);
  });
});

describe('webhooks', () => {
  it('deduplicates deliveries by Idempotency-Key in every mode and counts them', async () => {
    for (const mode of ['key', 'reference', 'none'] as const) {
      const p = await provider({ mode });
      const first = await post(p.url, '/webhooks', { event: 'deployed' }, { 'Idempotency-Key': 'evt-1' });
      expect(first.status).toBe(201);
      expect(first.body.delivery).toBe('accepted');
      const again = await post(p.url, '/webhooks', { event: 'deployed' }, { 'Idempotency-Key': 'evt-1' });
      expect(again.status).toBe(200);
      expect(again.body.delivery).toBe('duplicate');
      await post(p.url, '/webhooks', { event: 'deployed' }, { 'Idempotency-Key': 'evt-1' });
      await post(p.url, '/webhooks', [1, 2], { 'Idempotency-Key': 'evt-2' });

      const list = await get(p.url, '/webhooks');
      expect(list.body.deliveries).toEqual([
        { dedup_key: 'evt-1', times_received: 3, first_received_at: expect.any(String) },
        { dedup_key: 'evt-2', times_received: 1, first_received_at: expect.any(String) },
      ]);
    }
  });

  it('requires the Idempotency-Key header', async () => {
    const p = await provider({ mode: 'key' });
    const missing = await post(p.url, '/webhooks', { event: 'x' });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('missing_idempotency_key');
    expect((await post(p.url, '/webhooks', 'not json', { 'Idempotency-Key': 'e' })).status).toBe(400);
    expect((await get(p.url, '/webhooks')).body.deliveries).toEqual([]);
  });
});

describe('persistence', () => {
  it('keeps deployments, idempotency keys and deliveries across a restart on the same dbPath', async () => {
    const dbPath = join(tempDir(), 'provider.sqlite');
    const before = await startProvider({ mode: 'key', dbPath });
    const created = await post(before.url, '/deployments', app, { 'Idempotency-Key': 'persist' });
    await post(before.url, '/webhooks', { n: 1 }, { 'Idempotency-Key': 'evt' });
    await before.close();

    const after = await provider({ mode: 'key', dbPath });
    expect(await deployments(after.url)).toEqual([created.body]);
    const replay = await post(after.url, '/deployments', app, { 'Idempotency-Key': 'persist' });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(created.text);
    const conflict = await post(
      after.url,
      '/deployments',
      { ...app, version: '2' },
      {
        'Idempotency-Key': 'persist',
      },
    );
    expect(conflict.status).toBe(422);
    expect((await post(after.url, '/webhooks', { n: 1 }, { 'Idempotency-Key': 'evt' })).body.delivery).toBe(
      'duplicate',
    );
    expect(await deployments(after.url)).toHaveLength(1);
  });
});
