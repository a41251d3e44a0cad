import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  callSettled,
  deploymentArgs,
  getOperation,
  startProviderProcess,
  startWorkerProcess,
  waitFor,
  waitForOperation,
  withTimeout,
  type ChildHandle,
  type ProviderProcess,
} from '../helpers/durable-fixtures.js';
import {
  callTool,
  cleanup,
  closeQuietly,
  connectHttp,
  ensureBuilt,
  makeTempDir,
  startServerProcess,
  waitForLogLines,
  type LogLine,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';

// Durable operations end to end, provider mode key: a provider process and `idem serve` (or
// `idem serve --no-worker` with `idem worker` processes) on one database, driven over MCP HTTP.

let clients: Client[] = [];

beforeAll(() => ensureBuilt());

afterEach(async () => {
  await Promise.all(clients.map(closeQuietly));
  clients = [];
  await cleanup();
});

afterAll(cleanup);

/** Worker flags shared by `idem serve` and `idem worker`; `overrides` replace them by name. */
function workFlags(providerUrl: string, overrides: Record<string, string> = {}): string[] {
  const flags: Record<string, string> = {
    '--provider-url': providerUrl,
    '--provider-mode': 'key',
    '--worker-lease': '500ms',
    '--worker-poll': '50ms',
    '--deadline': '10s',
    '--attempt-timeout': '1s',
    ...overrides,
  };
  return Object.entries(flags).flat();
}

interface Setup {
  db: string;
  provider: ProviderProcess;
  server: ServerProcess;
  client: Client;
  /** Starts another `idem serve` on the same database and provider (e.g. after a crash). */
  restart(env?: Record<string, string>): Promise<{ server: ServerProcess; client: Client }>;
}

async function setup(
  options: { flags?: Record<string, string>; noWorker?: boolean; env?: Record<string, string> } = {},
): Promise<Setup> {
  const dir = makeTempDir('idem-durable-');
  const db = join(dir, 'idem.sqlite');
  const provider = await startProviderProcess('key', join(dir, 'provider.sqlite'));
  const args = [
    '--db',
    db,
    ...workFlags(provider.url, options.flags),
    ...(options.noWorker ? ['--no-worker'] : []),
  ];
  const start = async (env?: Record<string, string>) => {
    const server = await startServerProcess({ args, ...(env === undefined ? {} : { env }) });
    const client = await connectHttp(server.url);
    clients.push(client);
    return { server, client };
  };
  const first = await start(options.env);
  return { db, provider, ...first, restart: start };
}

async function accepted(client: Client, args: Record<string, unknown>): Promise<string> {
  const result = await callTool(client, 'start_deployment', args);
  expect(result.isError, JSON.stringify(result.sc)).toBe(false);
  expect(result.sc.status).toBe('accepted');
  expect(result.sc.next_action).toMatch(/get_operation/);
  return result.sc.operation_id as string;
}

/** Waits until the provider has committed `count` deployments (e.g. while a delayed reply is pending). */
function deploymentsReach(provider: ProviderProcess, count: number) {
  return waitFor(`${count} deployment(s) at the provider`, async () => {
    const deployments = await provider.deployments();
    return deployments.length >= count ? deployments : undefined;
  });
}

describe('cancellation', () => {
  it('before dispatch: cancelled, and nothing is ever deployed', async () => {
    const { db, provider, client } = await setup({ noWorker: true });
    const args = deploymentArgs(randomUUID(), 'web', 'cancel-early');
    const opId = await accepted(client, args);

    const cancel = await callTool(client, 'cancel_operation', { operation_id: opId });
    expect(cancel.isError).toBe(false);
    expect(cancel.sc).toMatchObject({ cancel: 'requested', status: 'cancel_requested', operation_id: opId });
    const again = await callTool(client, 'cancel_operation', { operation_id: opId });
    expect(again.sc).toMatchObject({ cancel: 'already_requested', status: 'cancel_requested' });

    // Only now does a worker exist; it must establish that nothing was dispatched and cancel.
    await startWorkerProcess(db, workFlags(provider.url));
    const final = await waitForOperation(client, opId);
    expect(final).toMatchObject({ status: 'cancelled', operation_id: opId, attempts: 0 });
    expect(final.resource_id).toBeUndefined();
    await sleep(300);
    expect(await provider.deployments()).toEqual([]);

    // A retry with the same key reports the cancellation and starts nothing.
    const retry = await callTool(client, 'start_deployment', args);
    expect(retry.isError).toBe(false);
    expect(retry.sc).toMatchObject({ status: 'cancelled', operation_id: opId, replayed: true });
    expect(retry.sc.next_action).toMatch(/new idempotency_key/);
    expect(await provider.deployments()).toEqual([]);
  });

  it('racing a success: the cancel is only requested and the deployment stays succeeded', async () => {
    const { provider, client } = await setup({ flags: { '--attempt-timeout': '5s' } });
    await provider.arm({ kind: 'delay', route: 'create', delayMs: 1500 });
    const opId = await accepted(client, deploymentArgs(randomUUID(), 'web', 'cancel-race'));

    // The provider has applied the request and holds its reply: the attempt is in flight.
    const [deployment] = await deploymentsReach(provider, 1);
    expect((await getOperation(client, opId)).status).toBe('running');
    const cancel = await callTool(client, 'cancel_operation', { operation_id: opId });
    expect(cancel.isError).toBe(false);
    expect(cancel.sc).toMatchObject({ cancel: 'requested', status: 'cancel_requested' });

    const final = await waitForOperation(client, opId);
    expect(final).toMatchObject({ status: 'succeeded', resource_id: deployment?.deployment_id, attempts: 1 });
    expect(await getOperation(client, opId)).toMatchObject({ status: 'succeeded' });
    expect(await provider.deployments()).toHaveLength(1);
  });

  it('of a final operation: already_final, and the operation is unchanged', async () => {
    const { provider, client } = await setup();
    const opId = await accepted(client, deploymentArgs(randomUUID(), 'web', 'cancel-late'));
    const final = await waitForOperation(client, opId);
    expect(final.status).toBe('succeeded');

    const cancel = await callTool(client, 'cancel_operation', { operation_id: opId });
    expect(cancel.isError).toBe(false);
    expect(cancel.sc).toMatchObject({ cancel: 'already_final', status: 'succeeded' });
    expect(await getOperation(client, opId)).toEqual(final);
    expect(await provider.deployments()).toHaveLength(1);
  });
});

describe('retries while running', () => {
  it('a duplicate call gets in_progress, then the replayed final result', async () => {
    const { provider, client } = await setup({
      flags: { '--attempt-timeout': '5s', '--in-flight-wait': '500ms' },
    });
    await provider.arm({ kind: 'delay', route: 'create', delayMs: 3000 });
    const args = deploymentArgs(randomUUID(), 'web', 'duplicate');
    const opId = await accepted(client, args);
    await deploymentsReach(provider, 1);

    const t0 = Date.now();
    const duplicate = await callTool(client, 'start_deployment', args);
    const waited = Date.now() - t0;
    expect(duplicate.isError).toBe(true);
    expect(duplicate.sc).toMatchObject({ status: 'running', operation_id: opId });
    expect(duplicate.sc.error).toMatchObject({ code: 'in_progress', retryable: true });
    expect(duplicate.sc.next_action).toMatch(/get_operation/);
    expect(waited).toBeGreaterThanOrEqual(450); // it waited the in-flight bound, no longer
    expect(waited).toBeLessThan(2500);

    const final = await waitForOperation(client, opId);
    expect(final.status).toBe('succeeded');
    const replay = await callTool(client, 'start_deployment', args);
    expect(replay.isError).toBe(false);
    expect(replay.sc).toEqual({ ...(final.result as object), replayed: true });
    expect(replay.sc).toMatchObject({
      status: 'succeeded',
      operation_id: opId,
      resource_id: final.resource_id,
    });
    expect(await provider.deployments()).toHaveLength(1);
  });
});

describe('giving up', () => {
  it('deadline exhaustion on repeated 503s: failed, naming the reason', async () => {
    const { provider, client } = await setup({ flags: { '--deadline': '2s', '--max-attempts': '10' } });
    await provider.arm({ kind: 'status', route: 'create', status: 503, times: 10 });
    const opId = await accepted(client, deploymentArgs(randomUUID(), 'web', 'deadline'));

    const final = await waitForOperation(client, opId);
    expect(final.status).toBe('failed');
    expect(final.error?.message).toMatch(/^deadline exhausted after \d+ attempts?: throttled \(HTTP 503\)/);
    expect(final.error?.retryable).toBe(false);
    expect(final.attempts).toBeGreaterThanOrEqual(2);
    expect(final.attempts).toBeLessThan(10);
    expect(Date.parse(final.updated_at as string) - Date.parse(final.created_at as string)).toBeLessThan(
      4000,
    );
    expect(await provider.deployments()).toEqual([]);
  });

  it('403: failed after exactly one provider request, nothing deployed', async () => {
    const { provider, client, server } = await setup();
    const opId = await accepted(client, deploymentArgs(randomUUID(), 'forbidden-x', '1.0.0'));

    const final = await waitForOperation(client, opId);
    expect(final.status).toBe('failed');
    expect(final.error).toMatchObject({ code: 'forbidden', retryable: false });
    expect(final.error?.message).toMatch(/HTTP 403/);
    expect(final.attempts).toBe(1);
    await sleep(500); // a retry would have happened by now
    expect((await getOperation(client, opId)).attempts).toBe(1);
    expect(
      await server.waitForLogs((l) => l.event === 'op.attempt' && l.operation_id === opId, 1),
    ).toHaveLength(1);
    expect(await provider.deployments()).toEqual([]);
  });

  it('429 with a Retry-After beyond the deadline: failed at once, not after 60 s', async () => {
    const { provider, client } = await setup({ flags: { '--deadline': '5s' } });
    await provider.arm({ kind: 'status', route: 'create', status: 429, retryAfterSeconds: 60 });
    const t0 = Date.now();
    const opId = await accepted(client, deploymentArgs(randomUUID(), 'web', 'retry-after'));

    const final = await waitForOperation(client, opId);
    expect(Date.now() - t0).toBeLessThan(4000);
    expect(final.status).toBe('failed');
    expect(final.error?.message).toMatch(/retry.after/i);
    expect(final.error?.message).toMatch(/HTTP 429/);
    expect(final.attempts).toBe(1);
    expect(await provider.deployments()).toEqual([]);
  });
});

describe('outbox', () => {
  it('delivers a webhook once; a crash after sending resends it with the same key', async () => {
    // The dispatcher's send timeout is half the lease; a 2 s lease keeps a slow (loaded) loopback
    // send from timing out into an extra, legitimate at-least-once resend.
    const setupA = await setup({ flags: { '--worker-lease': '2s' } });
    const { provider } = setupA;
    const note = async (client: Client, key: string) => {
      const result = await callTool(client, 'create_note', {
        idempotency_key: key,
        workspace: 'default',
        body: `note ${key}`,
        notify: true,
      });
      expect(result.isError, JSON.stringify(result.sc)).toBe(false);
      return result.sc.operation_id as string;
    };
    const delivery = (dedupKey: string, times: number) =>
      waitFor(`${dedupKey} received ${times} time(s)`, async () => {
        const found = (await provider.webhooks()).find((d) => d.dedup_key === dedupKey);
        return found !== undefined && found.times_received >= times ? found : undefined;
      });

    // 1. Normal delivery: exactly once.
    const firstOp = await note(setupA.client, 'note-1');
    const firstKey = `note-created:${firstOp}`;
    await delivery(firstKey, 1);
    await sleep(1000); // many polls: no resend
    expect(await provider.webhooks()).toEqual([
      expect.objectContaining({ dedup_key: firstKey, times_received: 1 }),
    ]);

    // 2. A server that dies right after the send, before marking it sent.
    await setupA.server.kill('SIGTERM');
    const crashing = await setupA.restart({ IDEM_TEST_FAULTS: 'outbox_after_send=kill' });
    const sent = await callSettled(crashing.client, 'create_note', {
      idempotency_key: 'note-2',
      workspace: 'default',
      body: 'note note-2',
      notify: true,
    });
    const exit = await withTimeout(crashing.server.waitForExit(), 10_000, 'server did not die after sending');
    expect(exit.signal).toBe('SIGKILL');
    const afterCrash = await provider.webhooks();
    expect(afterCrash).toHaveLength(2);
    const secondKey = afterCrash[1]?.dedup_key as string;
    expect(afterCrash[1]?.times_received).toBe(1);
    if (sent.ok) expect(secondKey).toBe(`note-created:${sent.result.sc.operation_id}`);

    // 3. Restarted without the fault: the unacknowledged message is sent again, once, same key.
    const restarted = await setupA.restart();
    const secondOp = await note(restarted.client, 'note-2'); // a replay of the committed note
    expect(secondKey).toBe(`note-created:${secondOp}`);
    await delivery(secondKey, 2);
    await sleep(1000);
    const outboxLog = restarted.server.stderrLines().filter((l) => l.includes('"outbox.'));
    expect(await provider.webhooks(), outboxLog.join('\n')).toEqual([
      expect.objectContaining({ dedup_key: firstKey, times_received: 1 }),
      expect.objectContaining({ dedup_key: secondKey, times_received: 2 }),
    ]);
    expect(await restarted.server.waitForLogs((l) => l.event === 'outbox.delivered', 1)).toHaveLength(1);
  });
});

describe('two worker processes on one database', () => {
  it('20 deployments: each succeeds once, with one attempt and one deployment', async () => {
    const { db, provider, client } = await setup({ noWorker: true });
    const flags = workFlags(provider.url, { '--worker-lease': '2s' });
    const workers: ChildHandle[] = await Promise.all([
      startWorkerProcess(db, flags),
      startWorkerProcess(db, flags),
    ]);

    const opIds = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        accepted(client, deploymentArgs(`two-workers-${i}`, `svc-${i}`, '1')),
      ),
    );
    expect(new Set(opIds).size).toBe(20);
    const finals = await Promise.all(opIds.map((id) => waitForOperation(client, id, { timeoutMs: 15_000 })));

    for (const final of finals) expect(final).toMatchObject({ status: 'succeeded', attempts: 1 });
    const deployments = await provider.deployments();
    expect(deployments).toHaveLength(20);
    expect(new Set(finals.map((f) => f.resource_id))).toEqual(
      new Set(deployments.map((d) => d.deployment_id)),
    );
    const attempt = (l: LogLine) => l.event === 'op.attempt';
    await waitForLogLines(() => workers.flatMap((w) => w.logs()), attempt, 20);
    const attemptsByWorker = workers.map((w) => w.logs().filter(attempt).length);
    expect(attemptsByWorker.reduce((a, b) => a + b, 0)).toBe(20);
    console.log(`two workers: op.attempt lines per worker = ${attemptsByWorker.join(' + ')}`);
  });
});
