import { getEventListeners } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DeploymentProviderClient, parseRetryAfter, type RecoveryMode } from '../../src/operations/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { underForcedGc } from '../helpers/forced-gc.js';
import { openProvider, recordRequests, refusedUrl, tempDir } from './operations-fixtures.js';

const app = { service: 'billing', version: '1.4.2' };

async function client(mode: RecoveryMode) {
  const provider = await openProvider(mode, tempDir());
  return { provider, client: new DeploymentProviderClient({ baseUrl: `${provider.url}/` }) };
}

const key = (mode: RecoveryMode, providerKey = 'idem-op_1') => ({ mode, providerKey, timeoutMs: 2_000 });

/** A server that answers every request with `reply`. */
async function rawServer(reply: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(reply);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('DeploymentProviderClient.create against the provider', () => {
  it('created, and in mode key the same key replays the same deployment', async () => {
    const { client: c } = await client('key');
    const first = await c.create(app, key('key'));
    expect(first).toMatchObject({ kind: 'created', replayed: false, body: { service: 'billing' } });
    const again = await c.create(app, key('key'));
    expect(again).toEqual({ ...first, replayed: true });
  });

  it('sends the key only as the mode prescribes', async () => {
    const sent = recordRequests();
    for (const mode of ['key', 'reference', 'none'] as const) {
      const { client: c } = await client(mode);
      expect((await c.create(app, key(mode))).kind).toBe('created');
    }
    expect(sent.map((r) => [r.idempotencyKey, JSON.parse(r.body ?? '{}')])).toEqual([
      ['idem-op_1', app],
      [undefined, { ...app, client_reference: 'idem-op_1' }],
      [undefined, app],
    ]);
  });

  it('403, 422 and idempotency_key_conflict are rejected with the provider reason', async () => {
    const { client: c } = await client('key');
    expect(await c.create({ service: 'forbidden-x', version: '1' }, key('key', 'k1'))).toEqual({
      kind: 'rejected',
      status: 403,
      reason: 'forbidden',
    });
    expect(await c.create({ service: 'invalid-x', version: '1' }, key('key', 'k2'))).toEqual({
      kind: 'rejected',
      status: 422,
      reason: 'invalid_request',
    });
    await c.create(app, key('key', 'k3'));
    expect(await c.create({ ...app, version: '9' }, key('key', 'k3'))).toEqual({
      kind: 'rejected',
      status: 422,
      reason: 'idempotency_key_conflict',
    });
  });

  it('429 and 503 are throttled, with Retry-After in ms when given', async () => {
    const { provider, client: c } = await client('none');
    provider.faults.arm({ kind: 'status', status: 429, route: 'create' });
    expect(await c.create(app, key('none'))).toEqual({ kind: 'throttled', status: 429, retryAfterMs: 1_000 });
    provider.faults.arm({ kind: 'status', status: 503, route: 'create', retryAfterSeconds: 7 });
    expect(await c.create(app, key('none'))).toEqual({ kind: 'throttled', status: 503, retryAfterMs: 7_000 });
    provider.faults.arm({ kind: 'status', status: 503, route: 'create' });
    expect(await c.create(app, key('none'))).toEqual({ kind: 'throttled', status: 503 });
  });

  it('500, 502, 504, a dropped reply and a timeout are ambiguous', async () => {
    const { provider, client: c } = await client('none');
    for (const status of [500, 502, 504]) {
      provider.faults.arm({ kind: 'status', status, route: 'create' });
      expect(await c.create(app, key('none'))).toEqual({ kind: 'ambiguous', reason: `http_${status}` });
    }
    provider.faults.arm({ kind: 'drop_response', route: 'create' });
    expect(await c.create(app, key('none'))).toEqual({ kind: 'ambiguous', reason: 'connection_closed' });
    provider.faults.arm({ kind: 'delay', route: 'create', delayMs: 1_000 });
    expect(await c.create(app, { ...key('none'), timeoutMs: 50 })).toEqual({
      kind: 'ambiguous',
      reason: 'timeout',
    });
  });

  it("the caller's abort is ambiguous (aborted), not a timeout", async () => {
    const { provider, client: c } = await client('none');
    provider.faults.arm({ kind: 'delay', route: 'create', delayMs: 1_000 });
    const controller = new AbortController();
    const pending = c.create(app, { ...key('none'), signal: controller.signal });
    setTimeout(() => controller.abort(new Error('lease lost')), 30);
    expect(await pending).toEqual({ kind: 'ambiguous', reason: 'aborted' });
  });

  it('a refused connection is throttled with status 0, marked unsent: nothing was sent', async () => {
    const c = new DeploymentProviderClient({ baseUrl: await refusedUrl() });
    expect(await c.create(app, key('none'))).toEqual({ kind: 'throttled', status: 0, unsent: true });
  });
});

describe('DeploymentProviderClient.create: replies the provider never gives', () => {
  it('a 2xx without a readable deployment id is ambiguous', async () => {
    for (const body of ['not json', '{"ok":true}', '[]', '{"deployment_id":""}']) {
      const url = await rawServer((_req, res) => res.writeHead(201).end(body));
      const c = new DeploymentProviderClient({ baseUrl: url });
      expect(await c.create(app, key('none'))).toEqual({ kind: 'ambiguous', reason: 'unreadable 201 body' });
    }
  });

  it('408, 409 and other statuses are ambiguous; other 4xx are rejected', async () => {
    for (const [status, kind] of [
      [408, 'ambiguous'],
      [409, 'ambiguous'],
      [501, 'ambiguous'],
      [302, 'ambiguous'],
      [400, 'rejected'],
      [404, 'rejected'],
    ] as const) {
      const url = await rawServer((_req, res) => res.writeHead(status, { location: '/x' }).end('nope'));
      const outcome = await new DeploymentProviderClient({ baseUrl: url }).create(app, key('none'));
      expect(outcome.kind, String(status)).toBe(kind);
      if (outcome.kind === 'rejected') expect(outcome.reason).toBe(`http_${status}`);
    }
  });

  it('Retry-After as an HTTP-date is measured from the injected clock', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 12, 0, 0));
    const url = await rawServer((_req, res) =>
      res.writeHead(429, { 'retry-after': 'Thu, 01 Jan 2026 12:00:05 GMT' }).end(),
    );
    const c = new DeploymentProviderClient({ baseUrl: url, clock });
    expect(await c.create(app, key('none'))).toEqual({ kind: 'throttled', status: 429, retryAfterMs: 5_000 });
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2026, 0, 1);
  it('reads delta-seconds and HTTP-dates; the past is 0; junk is undefined', () => {
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
    expect(parseRetryAfter(new Date(now + 1_500).toUTCString(), now)).toBe(1_000); // second precision
    expect(parseRetryAfter(new Date(now - 60_000).toUTCString(), now)).toBe(0);
    for (const junk of [null, '', '-1', '1.5', 'soon', '12abc'])
      expect(parseRetryAfter(junk, now), String(junk)).toBeUndefined();
  });
});

describe('DeploymentProviderClient.findByReference', () => {
  it('found (the oldest, with a count), absent, or failed', async () => {
    const { client: c } = await client('reference');
    expect(await c.findByReference('idem-op_9', { timeoutMs: 2_000 })).toEqual({ kind: 'absent' });
    const created = await c.create(app, key('reference', 'idem-op_9'));
    await c.create(app, key('reference', 'idem-op_9'));
    expect(await c.findByReference('idem-op_9', { timeoutMs: 2_000 })).toMatchObject({
      kind: 'found',
      deploymentId: created.kind === 'created' ? created.deploymentId : 'missing',
      count: 2,
    });
    const { client: keyed } = await client('key');
    expect(await keyed.findByReference('idem-op_9', { timeoutMs: 2_000 })).toEqual({
      kind: 'failed',
      reason: 'http_400',
    });
    const refused = new DeploymentProviderClient({ baseUrl: await refusedUrl() });
    expect(await refused.findByReference('r', { timeoutMs: 2_000 })).toEqual({
      kind: 'failed',
      reason: 'connection_refused',
    });
  });
});

describe('DeploymentProviderClient: the attempt timeout fires on time whatever the GC does (issue 22)', () => {
  // On Node 20 `AbortSignal.any([AbortSignal.timeout(ms), lease])` lost its timeout to the GC: the
  // request then ran until the provider answered (12 s against a 1 s attempt timeout).
  const stalled = () =>
    rawServer((_req, res) => {
      const answer = setTimeout(() => res.writeHead(201).end('{"deployment_id":"dep_late"}'), 6_000);
      res.once('close', () => clearTimeout(answer));
    });

  it('create with a lease signal: a 300 ms timeout ends the request before 3 s under forced collections', async () => {
    const c = new DeploymentProviderClient({ baseUrl: await stalled() });
    const lease = new AbortController();
    const { value, ms } = await underForcedGc(() =>
      c.create(app, { ...key('key'), timeoutMs: 300, signal: lease.signal }),
    );
    expect(value).toEqual({ kind: 'ambiguous', reason: 'timeout' });
    expect(ms).toBeGreaterThanOrEqual(290);
    expect(ms).toBeLessThan(3_000);
  });

  it('findByReference with a lease signal: the same', async () => {
    const c = new DeploymentProviderClient({ baseUrl: await stalled() });
    const lease = new AbortController();
    const { value, ms } = await underForcedGc(() =>
      c.findByReference('idem-op_1', { timeoutMs: 300, signal: lease.signal }),
    );
    expect(value).toEqual({ kind: 'failed', reason: 'timeout' });
    expect(ms).toBeLessThan(3_000);
  });

  it('an answered attempt lets go of the lease signal: no listener is left per attempt', async () => {
    // A worker's lease signal outlives many attempts: each attempt's listener on it must go with
    // the attempt, not live on until its timer fires.
    const c = new DeploymentProviderClient({
      baseUrl: await rawServer((_req, res) => res.writeHead(201).end('{"deployment_id":"dep_1"}')),
    });
    const lease = new AbortController();
    for (let i = 0; i < 5; i += 1) {
      expect(await c.create(app, { ...key('key'), timeoutMs: 60_000, signal: lease.signal })).toMatchObject({
        kind: 'created',
      });
      expect(await c.findByReference('idem-op_1', { timeoutMs: 60_000, signal: lease.signal })).toMatchObject(
        {
          kind: 'failed',
        },
      );
    }
    expect(getEventListeners(lease.signal, 'abort')).toHaveLength(0);
  });
});
