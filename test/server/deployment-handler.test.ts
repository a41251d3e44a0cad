/**
 * The reference server's deployment handler, built from the ready handlers of `idem/operations`,
 * one dispatch or lookup at a time (no worker) against the demo provider and against raw loopback
 * servers: every classification the provider's answers call for, in each mode. (These cases were
 * the old DeploymentProviderClient's; the worker's runs are in test/operations/worker*.test.ts.)
 */
import { getEventListeners } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { JsonObject } from '../../packages/idem/src/core/json.js';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import { providerKeyFor, type RecoveryMode } from '../../packages/idem/src/operations/public.js';
import {
  deploymentArgs,
  deploymentFields,
  deploymentHandler,
} from '../../packages/idem-cli/src/server/deployment-handler.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { underForcedGc } from '../helpers/forced-gc.js';
import { openProvider, recordRequests, refusedUrl, tempDir } from '../operations/operations-fixtures.js';

const app = { service: 'billing', version: '1.4.2' };

const record = (overrides: Partial<OperationRecord> = {}): OperationRecord => ({
  operationId: 'op_1',
  identity: { principal: 'p', workspace: 'w', operation: 'start_deployment', version: 1, key: 'k' },
  fingerprint: 'f',
  kind: 'durable',
  status: 'accepted',
  args: app,
  createdAt: 1_000,
  updatedAt: 1_000,
  attemptCount: 0,
  dispatched: false,
  ...overrides,
});

const context = (overrides: { providerKey?: string; timeoutMs?: number; signal?: AbortSignal } = {}) => ({
  providerKey: overrides.providerKey ?? 'idem-op_1',
  timeoutMs: overrides.timeoutMs ?? 2_000,
  signal: overrides.signal ?? new AbortController().signal,
});

const withArgs = (args: Record<string, string>) => record({ args });

/** The handler in `mode` against a fresh demo provider in `mode` (given a trailing slash). */
async function against(mode: RecoveryMode) {
  const provider = await openProvider(mode, tempDir());
  return { provider, handler: deploymentHandler({ baseUrl: `${provider.url}/`, mode }) };
}

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

describe('deploymentHandler dispatch against the provider', () => {
  it('created with { deployment_id, service, version }, and in mode key the same key replays it', async () => {
    const { handler } = await against('key');
    expect(handler.mode).toBe('key');
    const first = await handler.dispatch(record(), context());
    expect(first).toMatchObject({ kind: 'created', replayed: false, fields: app });
    const id = first.kind === 'created' ? first.resourceId : 'missing';
    expect(first).toMatchObject({ resourceId: id, fields: { deployment_id: id } });
    expect(await handler.dispatch(record(), context())).toEqual({ ...first, replayed: true });
  });

  it('sends the key only as the mode prescribes: a header, a body field, or nothing', async () => {
    const sent = recordRequests();
    for (const mode of ['key', 'reference', 'none'] as const) {
      const { handler } = await against(mode);
      expect(handler.mode).toBe(mode);
      expect((await handler.dispatch(record(), context())).kind).toBe('created');
    }
    expect(sent.map((r) => [r.method, r.idempotencyKey, JSON.parse(r.body ?? '{}')])).toEqual([
      ['POST', 'idem-op_1', app],
      ['POST', undefined, { ...app, client_reference: 'idem-op_1' }],
      ['POST', undefined, app],
    ]);
  });

  it('403 is forbidden; 422 and idempotency_key_conflict are invalid_argument, with the provider reason', async () => {
    const { handler } = await against('key');
    expect(
      await handler.dispatch(
        withArgs({ service: 'forbidden-x', version: '1' }),
        context({ providerKey: 'k1' }),
      ),
    ).toEqual({ kind: 'rejected', code: 'forbidden', status: 403, reason: 'forbidden' });
    expect(
      await handler.dispatch(
        withArgs({ service: 'invalid-x', version: '1' }),
        context({ providerKey: 'k2' }),
      ),
    ).toEqual({ kind: 'rejected', code: 'invalid_argument', status: 422, reason: 'invalid_request' });
    await handler.dispatch(record(), context({ providerKey: 'k3' }));
    expect(
      await handler.dispatch(withArgs({ ...app, version: '9' }), context({ providerKey: 'k3' })),
    ).toEqual({
      kind: 'rejected',
      code: 'invalid_argument',
      status: 422,
      reason: 'idempotency_key_conflict',
    });
  });

  it('429 and 503 are throttled, with Retry-After in ms when given', async () => {
    const { provider, handler } = await against('none');
    provider.faults.arm({ kind: 'status', status: 429, route: 'create' });
    expect(await handler.dispatch(record(), context())).toEqual({
      kind: 'throttled',
      status: 429,
      retryAfterMs: 1_000,
    });
    provider.faults.arm({ kind: 'status', status: 503, route: 'create', retryAfterSeconds: 7 });
    expect(await handler.dispatch(record(), context())).toEqual({
      kind: 'throttled',
      status: 503,
      retryAfterMs: 7_000,
    });
    provider.faults.arm({ kind: 'status', status: 503, route: 'create' });
    expect(await handler.dispatch(record(), context())).toEqual({ kind: 'throttled', status: 503 });
  });

  it('500, 502, 504, a dropped reply and a timeout are ambiguous', async () => {
    const { provider, handler } = await against('none');
    for (const status of [500, 502, 504]) {
      provider.faults.arm({ kind: 'status', status, route: 'create' });
      expect(await handler.dispatch(record(), context())).toEqual({
        kind: 'ambiguous',
        reason: `http_${status}`,
      });
    }
    provider.faults.arm({ kind: 'drop_response', route: 'create' });
    expect(await handler.dispatch(record(), context())).toEqual({
      kind: 'ambiguous',
      reason: 'connection_closed',
    });
    provider.faults.arm({ kind: 'delay', route: 'create', delayMs: 1_000 });
    expect(await handler.dispatch(record(), context({ timeoutMs: 50 }))).toEqual({
      kind: 'ambiguous',
      reason: 'timeout',
    });
  });

  it("the caller's abort is ambiguous (aborted), not a timeout", async () => {
    const { provider, handler } = await against('none');
    provider.faults.arm({ kind: 'delay', route: 'create', delayMs: 1_000 });
    const controller = new AbortController();
    const pending = handler.dispatch(record(), context({ signal: controller.signal }));
    setTimeout(() => controller.abort(new Error('lease lost')), 30);
    expect(await pending).toEqual({ kind: 'ambiguous', reason: 'aborted' });
  });

  it('a refused connection is throttled with status 0, marked unsent: nothing was sent', async () => {
    for (const mode of ['key', 'reference', 'none'] as const) {
      const handler = deploymentHandler({ baseUrl: await refusedUrl(), mode });
      expect(await handler.dispatch(record(), context()), mode).toEqual({
        kind: 'throttled',
        status: 0,
        unsent: true,
      });
    }
  });

  it('args that are not two strings are rejected invalid_argument before anything is sent', async () => {
    const sent = recordRequests();
    for (const mode of ['key', 'reference', 'none'] as const) {
      const { handler } = await against(mode);
      const malformed: JsonObject[] = [{ service: 'billing' }, { service: 'billing', version: 2 }, {}];
      for (const args of malformed) {
        expect(await handler.dispatch(record({ args }), context()), mode).toEqual({
          kind: 'rejected',
          code: 'invalid_argument',
          status: 0,
          reason: 'invalid_args',
        });
      }
    }
    expect(sent).toEqual([]);
  });
});

describe('deploymentHandler dispatch: replies the provider never gives', () => {
  it('a 2xx without a readable deployment id is ambiguous', async () => {
    for (const body of ['not json', '{"ok":true}', '[]', '{"deployment_id":""}', '{"deployment_id":7}']) {
      const url = await rawServer((_req, res) => res.writeHead(201).end(body));
      const handler = deploymentHandler({ baseUrl: url, mode: 'none' });
      expect(await handler.dispatch(record(), context()), body).toEqual({
        kind: 'ambiguous',
        reason: 'unreadable 201 body',
      });
    }
  });

  it('408, 409 and other statuses are ambiguous; other 4xx are rejected (401 forbidden)', async () => {
    for (const [status, expected] of [
      [408, { kind: 'ambiguous', reason: 'http_408' }],
      [409, { kind: 'ambiguous', reason: 'http_409' }],
      [501, { kind: 'ambiguous', reason: 'http_501' }],
      // fetch follows the redirect (here to itself, until it gives up): still ambiguous.
      [302, { kind: 'ambiguous' }],
      [400, { kind: 'rejected', code: 'invalid_argument', status: 400, reason: 'http_400' }],
      [404, { kind: 'rejected', code: 'invalid_argument', status: 404, reason: 'http_404' }],
      [401, { kind: 'rejected', code: 'forbidden', status: 401, reason: 'http_401' }],
    ] as const) {
      const url = await rawServer((_req, res) => res.writeHead(status, { location: '/x' }).end('nope'));
      const handler = deploymentHandler({ baseUrl: url, mode: 'key' });
      expect(await handler.dispatch(record(), context()), String(status)).toMatchObject(expected);
    }
  });

  it('Retry-After as an HTTP-date is measured from the injected clock', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 12, 0, 0));
    const url = await rawServer((_req, res) =>
      res.writeHead(429, { 'retry-after': 'Thu, 01 Jan 2026 12:00:05 GMT' }).end(),
    );
    const handler = deploymentHandler({ baseUrl: url, mode: 'none', clock });
    expect(await handler.dispatch(record(), context())).toEqual({
      kind: 'throttled',
      status: 429,
      retryAfterMs: 5_000,
    });
  });
});

describe('deploymentHandler reconcile', () => {
  it('mode reference: absent, then the oldest deployment carrying the reference; key and none: unsupported', async () => {
    const { handler } = await against('reference');
    const ctx = context({ providerKey: 'idem-op_9' });
    expect(await handler.reconcile(record(), ctx)).toEqual({ kind: 'absent' });
    const first = await handler.dispatch(record(), ctx);
    await handler.dispatch(record(), ctx);
    const id = first.kind === 'created' ? first.resourceId : 'missing';
    expect(await handler.reconcile(record(), ctx)).toEqual({
      kind: 'created',
      resourceId: id,
      fields: { deployment_id: id, ...app },
    });
    // Another reference's deployment is not this one.
    expect(await handler.reconcile(record(), context({ providerKey: 'idem-op_other' }))).toEqual({
      kind: 'absent',
    });
    for (const mode of ['key', 'none'] as const) {
      const other = deploymentHandler({ baseUrl: await refusedUrl(), mode });
      expect(await other.reconcile(record(), ctx), mode).toEqual({ kind: 'unsupported' });
    }
  });

  it('a failed lookup settles nothing: an error status or a refused connection is ambiguous', async () => {
    // A provider in mode key does not search by client_reference: 400.
    const { provider } = await against('key');
    const wrong = deploymentHandler({ baseUrl: provider.url, mode: 'reference' });
    expect(await wrong.reconcile(record(), context())).toEqual({
      kind: 'ambiguous',
      reason: 'lookup http_400',
    });
    const refused = deploymentHandler({ baseUrl: await refusedUrl(), mode: 'reference' });
    expect(await refused.reconcile(record(), context())).toEqual({
      kind: 'ambiguous',
      reason: 'lookup connection_refused',
    });
  });
});

describe('deploymentHandler: the attempt timeout fires on time whatever the GC does (issue 22)', () => {
  // On Node 20 `AbortSignal.any([AbortSignal.timeout(ms), lease])` lost its timeout to the GC: the
  // request then ran until the provider answered (12 s against a 1 s attempt timeout).
  const stalled = () =>
    rawServer((_req, res) => {
      const answer = setTimeout(() => res.writeHead(201).end('{"deployment_id":"dep_late"}'), 6_000);
      res.once('close', () => clearTimeout(answer));
    });

  it('dispatch with a lease signal: a 300 ms timeout ends the request before 3 s under forced collections', async () => {
    const handler = deploymentHandler({ baseUrl: await stalled(), mode: 'key' });
    const lease = new AbortController();
    const { value, ms } = await underForcedGc(() =>
      handler.dispatch(record(), context({ timeoutMs: 300, signal: lease.signal })),
    );
    expect(value).toEqual({ kind: 'ambiguous', reason: 'timeout' });
    expect(ms).toBeGreaterThanOrEqual(290);
    expect(ms).toBeLessThan(3_000);
  });

  it('reconcile with a lease signal: the same', async () => {
    const handler = deploymentHandler({ baseUrl: await stalled(), mode: 'reference' });
    const lease = new AbortController();
    const { value, ms } = await underForcedGc(() =>
      handler.reconcile(record(), context({ timeoutMs: 300, signal: lease.signal })),
    );
    expect(value).toEqual({ kind: 'ambiguous', reason: 'lookup timeout' });
    expect(ms).toBeLessThan(3_000);
  });

  it('an answered attempt lets go of the lease signal: no listener is left per attempt', async () => {
    // A worker's lease signal outlives many attempts: each attempt's listener on it must go with
    // the attempt, not live on until its timer fires.
    const handler = deploymentHandler({
      baseUrl: await rawServer((_req, res) => res.writeHead(201).end('{"deployment_id":"dep_1"}')),
      mode: 'reference',
    });
    const lease = new AbortController();
    const ctx = context({ timeoutMs: 60_000, signal: lease.signal });
    for (let i = 0; i < 5; i += 1) {
      expect(await handler.dispatch(record(), ctx)).toMatchObject({ kind: 'created' });
      expect(await handler.reconcile(record(), ctx)).toEqual({
        kind: 'ambiguous',
        reason: 'lookup http_201',
      });
    }
    expect(getEventListeners(lease.signal, 'abort')).toHaveLength(0);
  });
});

describe('deploymentHandler nextAction and fields', () => {
  const window = { providerKey: 'idem-op_1', from: Date.UTC(2026, 0, 1), to: Date.UTC(2026, 0, 1, 0, 5) };
  const handler = (mode: RecoveryMode) => deploymentHandler({ baseUrl: 'http://127.0.0.1:9', mode });

  it('names the provider, service and version, the key as sent, and the time window', () => {
    const between = 'between 2026-01-01T00:00:00.000Z and 2026-01-01T00:05:00.000Z';
    const keyed = handler('key').nextAction(record(), window);
    expect(keyed).toBe(
      'Check the deployment provider for a deployment of service "billing" at version "1.4.2" with ' +
        `Idempotency-Key idem-op_1 made ${between}; then have an operator resolve this operation as ` +
        'succeeded (with the resource id) or failed. Do not retry with a new idempotency_key before ' +
        'that: it could apply the effect twice.',
    );
    const referenced = handler('reference').nextAction(record(), window);
    expect(referenced).toMatch(
      /^Search the deployment provider for a deployment of service "billing" at version "1\.4\.2" with client_reference idem-op_1, created between 2026-01-01T00:00:00\.000Z and 2026-01-01T00:05:00\.000Z; then have an operator resolve/,
    );
    const unkeyed = handler('none').nextAction(record(), window);
    expect(unkeyed).toMatch(
      /^Check the deployment provider for a deployment of service "billing" at version "1\.4\.2" made between 2026-01-01T00:00:00\.000Z and 2026-01-01T00:05:00\.000Z \(this provider keeps no key: provider key idem-op_1 was not sent/,
    );
    expect(unkeyed).not.toContain('Idempotency-Key');
    // Stopped because the provider may have forgotten the key: the sentence starts with why.
    const forgotten = handler('key').nextAction(record(), { ...window, keyRetentionPassedMs: 1_000 });
    expect(forgotten).toMatch(
      /^No resend was made: the deployment provider keeps an Idempotency-Key for 1000 ms and may have forgotten this one, so a resend could apply it again\. Check the deployment provider for a deployment of service "billing"/,
    );
    expect(keyed).not.toContain('No resend was made');
    // Args that are not two strings (never sent) are still named as a deployment.
    expect(handler('key').nextAction(record({ args: { service: 1 } }), window)).toMatch(
      /^Check the deployment provider for a deployment with Idempotency-Key/,
    );
  });

  it('an operator-settled success has the fields of a dispatched one', () => {
    for (const mode of ['key', 'reference', 'none'] as const)
      expect(handler(mode).successFields?.(record(), 'dep_7'), mode).toEqual({
        deployment_id: 'dep_7',
        ...app,
      });
    expect(deploymentFields(record(), 'dep_7')).toEqual({ deployment_id: 'dep_7', ...app });
    expect(deploymentFields(record({ args: { service: 'x' } }), 'dep_7')).toEqual({
      deployment_id: 'dep_7',
      service: '',
      version: '',
    });
    expect(deploymentArgs(record())).toEqual(app);
    expect(deploymentArgs(record({ args: { service: 'x', version: 1 } }))).toBeUndefined();
    expect(providerKeyFor('op_1')).toBe('idem-op_1');
  });
});
