import { FaultPoints } from '../../packages/idem/src/core/fault-points.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { newAttemptId, newOperationId } from '../../packages/idem/src/core/ids.js';
import type { OperationIdentity } from '../../packages/idem/src/core/operation-identity.js';
import type { OutboxIntent } from '../../packages/idem/src/ports/receipt-store.js';
import type { SqliteStore } from '../../packages/idem/src/adapters/sqlite/index.js';
import { DEFAULT_OUTBOX_MAX_ATTEMPTS, OutboxDispatcher } from '../../packages/idem/src/operations/index.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import {
  eventually,
  memoryLogger,
  openProvider,
  openStore,
  recordRequests,
  refusedUrl,
  tempDir,
} from './operations-fixtures.js';
import { commitOnce } from '../../packages/idem/src/executor/commit-once.js';

interface Delivery {
  dedup_key: string;
  times_received: number;
}

async function setup(clock: FakeClock) {
  const dir = tempDir();
  const store = openStore(join(dir, 'idem.sqlite'), clock);
  const provider = await openProvider('none', dir);
  const logger = memoryLogger();
  const faults = new FaultPoints();
  const dispatcher = (options: Partial<ConstructorParameters<typeof OutboxDispatcher>[0]> = {}) =>
    new OutboxDispatcher({
      store,
      faults,
      clock,
      logger,
      leaseMs: 5_000,
      random: () => 0,
      pollIntervalMs: 5,
      ...options,
    });
  const deliveries = async (): Promise<Delivery[]> =>
    ((await (await fetch(`${provider.url}/webhooks`)).json()) as { deliveries: Delivery[] }).deliveries;
  return { store, faults, provider, logger, dispatcher, deliveries, clock };
}

/** A local operation whose effect enqueues `intents` in its own transaction (and may then throw). */
async function commitWithMessages(
  store: SqliteStore,
  clock: FakeClock,
  intents: OutboxIntent[],
  fail = false,
) {
  const operationId = newOperationId(clock.now());
  const identity: OperationIdentity = {
    principal: 'alice',
    workspace: 'team-a',
    operation: 'notify',
    version: 1,
    key: operationId,
  };
  const now = clock.now();
  return commitOnce(store.receipts, {
    identity,
    context: { operationId, attemptId: newAttemptId(clock.now()), identity },
    decide: () => ({ kind: 'execute' }),
    effect: (_db, context) => {
      for (const intent of intents) void context.enqueue(intent);
      if (fail) throw new Error('effect failed after enqueueing');
      return { resource_id: 'r_1' };
    },
    receipt: (result) => ({
      operationId,
      identity,
      fingerprint: 'f',
      kind: 'local',
      status: 'succeeded',
      resourceId: result?.resource_id ?? 'r_1',
      result: { status: 'succeeded', operation_id: operationId, resource_id: 'r_1' },
      createdAt: now,
      updatedAt: now,
      expiresAt: now + 60_000,
      attemptCount: 1,
      dispatched: false,
    }),
  });
}

describe('OutboxDispatcher', () => {
  it('delivers a committed message once, with its dedup key and payload', async () => {
    const t = await setup(new FakeClock());
    const sent = recordRequests();
    const destination = `${t.provider.url}/webhooks`;
    await commitWithMessages(t.store, t.clock, [
      { destination, dedupKey: 'evt-1', payload: { event: 'deployed', n: 1 } },
    ]);
    const dispatcher = t.dispatcher();
    expect(await dispatcher.runOnce()).toBe(1);
    expect(await dispatcher.runOnce()).toBe(0);
    expect(await t.deliveries()).toEqual([
      expect.objectContaining({ dedup_key: 'evt-1', times_received: 1 }),
    ]);
    const posts = sent.filter((r) => r.method === 'POST');
    expect(posts).toEqual([
      { method: 'POST', url: destination, idempotencyKey: 'evt-1', body: '{"event":"deployed","n":1}' },
    ]);
    expect(t.logger.events('outbox.delivered')).toEqual([
      expect.objectContaining({ destination: new URL(destination).host, attempts: 1 }),
    ]);
    expect(JSON.stringify(t.logger.lines)).not.toContain('deployed');
  });

  it('a message enqueued by an effect that failed is never sent', async () => {
    const t = await setup(new FakeClock());
    const destination = `${t.provider.url}/webhooks`;
    await expect(
      commitWithMessages(t.store, t.clock, [{ destination, dedupKey: 'evt-x', payload: {} }], true),
    ).rejects.toThrow();
    expect(await t.dispatcher().runOnce()).toBe(0);
    expect(await t.deliveries()).toEqual([]);
  });

  it('a crash after sending (outbox_after_send) resends after the lease: received twice, delivered once', async () => {
    const t = await setup(new FakeClock());
    await commitWithMessages(t.store, t.clock, [
      { destination: `${t.provider.url}/webhooks`, dedupKey: 'evt-2', payload: { event: 'deployed' } },
    ]);
    t.faults.arm('outbox_after_send', () => {
      throw new Error('crash after send');
    });
    const dispatcher = t.dispatcher();
    await expect(dispatcher.runOnce()).rejects.toThrow('crash after send');
    expect(await t.deliveries()).toEqual([
      expect.objectContaining({ dedup_key: 'evt-2', times_received: 1 }),
    ]);
    expect(await dispatcher.runOnce()).toBe(0); // still leased
    t.clock.advance(5_000);
    expect(await t.dispatcher().runOnce()).toBe(1);
    expect(await dispatcher.runOnce()).toBe(0);
    const deliveries = await t.deliveries();
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ dedup_key: 'evt-2', times_received: 2 });
  });

  it('a refused send is retried after a full-jitter backoff', async () => {
    const t = await setup(new FakeClock());
    await commitWithMessages(t.store, t.clock, [
      { destination: `${t.provider.url}/webhooks`, dedupKey: 'evt-3', payload: {} },
    ]);
    t.provider.faults.arm({ kind: 'status', status: 503, route: 'webhook', times: 2 });
    const dispatcher = t.dispatcher({ random: () => 0.5 });
    expect(await dispatcher.runOnce()).toBe(1); // 503: backoff 0.5 * 200 ms
    expect(t.logger.events('outbox.retry_scheduled')).toEqual([
      expect.objectContaining({ outcome: 'http_503', delay_ms: 100, attempts: 1 }),
    ]);
    expect(await dispatcher.runOnce()).toBe(0);
    t.clock.advance(100);
    expect(await dispatcher.runOnce()).toBe(1); // 503 again: backoff 0.5 * 400 ms
    t.clock.advance(199);
    expect(await dispatcher.runOnce()).toBe(0);
    t.clock.advance(1);
    expect(await dispatcher.runOnce()).toBe(1);
    expect(await t.deliveries()).toEqual([
      expect.objectContaining({ dedup_key: 'evt-3', times_received: 1 }),
    ]);
  });

  it('a redirect is not followed: the message goes to no other URL and is retried (http_307)', async () => {
    const t = await setup(new FakeClock());
    let redirected = 0;
    const elsewhere = createServer((_req, res) => {
      redirected += 1;
      res.writeHead(200).end();
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    const origin = createServer((_req, res) => {
      const { port } = elsewhere.address() as AddressInfo;
      res.writeHead(307, { location: `http://127.0.0.1:${port}/hook` }).end();
    });
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = origin.address() as AddressInfo;
      await commitWithMessages(t.store, t.clock, [
        { destination: `http://127.0.0.1:${port}/hook`, dedupKey: 'evt-r', payload: {} },
      ]);
      expect(await t.dispatcher().runOnce()).toBe(1);
      expect(redirected).toBe(0);
      expect(t.logger.events('outbox.retry_scheduled')).toEqual([
        expect.objectContaining({ outcome: 'http_307', attempts: 1 }),
      ]);
    } finally {
      origin.close();
      elsewhere.close();
    }
  });

  it('an unreachable destination is retried, not lost', async () => {
    const t = await setup(new FakeClock());
    await commitWithMessages(t.store, t.clock, [
      { destination: `${await refusedUrl()}/webhooks`, dedupKey: 'evt-4', payload: {} },
    ]);
    expect(await t.dispatcher().runOnce()).toBe(1);
    expect(t.logger.events('outbox.retry_scheduled')).toEqual([
      expect.objectContaining({ outcome: 'connection_refused' }),
    ]);
    expect(await t.dispatcher().runOnce()).toBe(1); // random 0: due again at once
  });

  it('after maxAttempts sends without a 2xx the message is a dead letter: logged, not sent again until re-queued', async () => {
    const t = await setup(new FakeClock());
    const sent = recordRequests();
    const destination = `${t.provider.url}/webhooks`;
    await commitWithMessages(t.store, t.clock, [{ destination, dedupKey: 'evt-dead', payload: {} }]);
    t.provider.faults.arm({ kind: 'status', status: 500, route: 'webhook', times: 3 });
    const dispatcher = t.dispatcher({ maxAttempts: 3 });
    for (let i = 0; i < 3; i += 1) expect(await dispatcher.runOnce()).toBe(1);
    expect(t.logger.events('outbox.retry_scheduled')).toHaveLength(2);
    expect(t.logger.events('outbox.dead_lettered')).toEqual([
      expect.objectContaining({ outcome: 'http_500', attempts: 3, destination: new URL(destination).host }),
    ]);
    const [dead, ...others] = await t.store.outbox.deadLetters();
    expect(others).toEqual([]);
    expect(dead).toMatchObject({
      dedupKey: 'evt-dead',
      attempts: 3,
      lastError: 'http_500',
      deadAt: t.clock.now(),
    });

    t.clock.advance(365 * 24 * 3_600_000);
    expect(await dispatcher.runOnce()).toBe(0);
    expect(sent.filter((r) => r.method === 'POST')).toHaveLength(3);
    expect(await t.deliveries()).toEqual([]);

    // Re-queued: due at once, with a fresh count; the receiver now accepts it.
    expect(await t.store.outbox.requeue(dead?.id ?? -1, t.clock.now())).toMatchObject({ attempts: 0 });
    expect(await dispatcher.runOnce()).toBe(1);
    expect(await t.deliveries()).toEqual([
      expect.objectContaining({ dedup_key: 'evt-dead', times_received: 1 }),
    ]);
    expect(await t.store.outbox.deadLetters()).toEqual([]);
  });

  it('keeps retrying below maxAttempts (default 20), and refuses a limit below 1', async () => {
    const t = await setup(new FakeClock());
    await commitWithMessages(t.store, t.clock, [
      { destination: `${await refusedUrl()}/webhooks`, dedupKey: 'evt-many', payload: {} },
    ]);
    const dispatcher = t.dispatcher();
    for (let i = 0; i < DEFAULT_OUTBOX_MAX_ATTEMPTS - 1; i += 1) expect(await dispatcher.runOnce()).toBe(1);
    expect(await t.store.outbox.deadLetters()).toEqual([]);
    expect(await dispatcher.runOnce()).toBe(1);
    expect(await t.store.outbox.deadLetters()).toMatchObject([
      { dedupKey: 'evt-many', attempts: DEFAULT_OUTBOX_MAX_ATTEMPTS, lastError: 'connection_refused' },
    ]);
    expect(DEFAULT_OUTBOX_MAX_ATTEMPTS).toBe(20);
    expect(() => t.dispatcher({ maxAttempts: 0 })).toThrow(RangeError);
    expect(() => t.dispatcher({ maxAttempts: 1.5 })).toThrow(RangeError);
  });

  it('backoff: full jitter under min(cap, base * 2^(attempts - 1))', async () => {
    const t = await setup(new FakeClock());
    const top = t.dispatcher({ random: () => 0.999999 });
    expect(top.backoff(1)).toBe(199);
    expect(top.backoff(2)).toBe(399);
    expect(top.backoff(20)).toBe(29_999);
    expect(t.dispatcher({ random: () => 0 }).backoff(9)).toBe(0);
  });

  it('start/stop: the loop delivers what is committed while it runs', async () => {
    const t = await setup(new FakeClock());
    const dispatcher = t.dispatcher();
    dispatcher.start();
    try {
      await commitWithMessages(t.store, t.clock, [
        { destination: `${t.provider.url}/webhooks`, dedupKey: 'evt-5', payload: {} },
        { destination: `${t.provider.url}/webhooks`, dedupKey: 'evt-6', payload: {} },
      ]);
      // The loop sleeps on the fake clock between idle polls; move it along.
      await eventually(async () => {
        t.clock.advance(5);
        return (await t.deliveries()).length === 2;
      });
    } finally {
      await dispatcher.stop();
    }
  });
});
