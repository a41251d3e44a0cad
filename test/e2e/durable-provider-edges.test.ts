import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  deploymentArgs,
  startProviderProcess,
  waitForOperation,
  type ProviderProcess,
} from '../helpers/durable-fixtures.js';
import {
  callTool,
  cleanup,
  closeQuietly,
  connectHttp,
  ensureBuilt,
  freePort,
  makeTempDir,
  startServerProcess,
} from '../helpers/mcp-fixtures.js';

// Issue 22 through the built CLI: a provider that restarts (point 5) and a provider that forgets
// its idempotency keys (point 4), each against `idem serve` with its worker, driven over MCP HTTP.

let clients: Client[] = [];

beforeAll(() => ensureBuilt());

afterEach(async () => {
  await Promise.all(clients.map(closeQuietly));
  clients = [];
  await cleanup();
});

afterAll(cleanup);

async function serve(providerUrl: string, flags: Record<string, string>): Promise<Client> {
  const dir = makeTempDir('idem-provider-edges-');
  const args = {
    '--db': join(dir, 'idem.sqlite'),
    '--provider-url': providerUrl,
    '--provider-mode': 'key',
    '--worker-lease': '2s',
    '--worker-poll': '50ms',
    ...flags,
  };
  const server = await startServerProcess({ args: Object.entries(args).flat() });
  const client = await connectHttp(server.url);
  clients.push(client);
  return client;
}

async function accepted(client: Client, args: Record<string, unknown>): Promise<string> {
  const result = await callTool(client, 'start_deployment', args);
  expect(result.isError, JSON.stringify(result.sc)).toBe(false);
  expect(result.sc.status).toBe('accepted');
  return result.sc.operation_id as string;
}

describe('a provider that is down when the worker calls', () => {
  it('restarts within 1.5 s: the deployment succeeds, once', async () => {
    const port = await freePort();
    const client = await serve(`http://127.0.0.1:${port}`, {
      '--deadline': '15s',
      '--attempt-timeout': '2s',
    });
    const opId = await accepted(client, deploymentArgs(randomUUID(), 'web', 'restart'));
    await sleep(1_500);
    const dir = makeTempDir('idem-provider-late-');
    const provider: ProviderProcess = await startProviderProcess('key', join(dir, 'provider.sqlite'), {
      port,
    });

    const final = await waitForOperation(client, opId, { timeoutMs: 20_000 });
    expect(final).toMatchObject({ status: 'succeeded' });
    // More than --max-attempts (3) attempts: the refused ones sent nothing and did not count.
    expect(final.attempts).toBeGreaterThan(3);
    expect(await provider.deployments()).toHaveLength(1);
  });

  it('never comes up: failed by the deadline (3 s), saying that nothing reached it', async () => {
    const port = await freePort();
    const client = await serve(`http://127.0.0.1:${port}`, { '--deadline': '3s', '--attempt-timeout': '1s' });
    const opId = await accepted(client, deploymentArgs(randomUUID(), 'web', 'never'));

    const final = await waitForOperation(client, opId, { timeoutMs: 10_000 });
    expect(final.status).toBe('failed');
    expect(final.error?.message).toMatch(
      /^deadline exhausted after \d+ attempts, none of which reached the provider \(nothing was done\): connection refused$/,
    );
    expect(final.attempts).toBeGreaterThan(3);
    // The last try comes at most minAttemptMs (100) + --worker-poll (50) + baseDelayMs (200) early.
    const spent = Date.parse(final.updated_at as string) - Date.parse(final.created_at as string);
    expect(spent).toBeGreaterThanOrEqual(3_000 - 100 - 50 - 200);
    expect(spent).toBeLessThan(5_000);
  });
});

describe('a provider that keeps idempotency keys for 2 s', () => {
  it('reply dropped, then a 429 with Retry-After: 3: outcome_unknown, one deployment', async () => {
    const dir = makeTempDir('idem-provider-keys-');
    const provider = await startProviderProcess('key', join(dir, 'provider.sqlite'), { keyRetention: '2s' });
    const client = await serve(provider.url, {
      '--provider-key-retention': '2s',
      '--deadline': '15s',
      '--attempt-timeout': '1s',
    });
    await provider.arm({ kind: 'drop_response', route: 'create' });
    // 2 s of key retention leave the first attempt and the resend time to run on a loaded machine.
    await provider.arm({ kind: 'status', route: 'create', status: 429, retryAfterSeconds: 3 });
    const args = deploymentArgs(randomUUID(), 'web', 'forgotten-key');
    const opId = await accepted(client, args);

    const final = await waitForOperation(client, opId, { timeoutMs: 10_000 });
    expect(final.status).toBe('outcome_unknown');
    expect(final.error?.message).toMatch(/the provider may have forgotten the key/);
    expect(final.next_action).toMatch(
      /^No resend was made: the deployment provider keeps an Idempotency-Key for 2000 ms and may have forgotten this one/,
    );
    expect(final.next_action).toMatch(/Check the deployment provider for a deployment of service "web"/);
    // A resend after the Retry-After would have created a second deployment by now.
    await sleep(3_500);
    expect(await provider.deployments()).toHaveLength(1);
    const replay = await callTool(client, 'start_deployment', args);
    expect(replay.sc).toMatchObject({ status: 'outcome_unknown', operation_id: opId });
    expect(replay.sc.next_action).toBe(final.next_action);
  });
});
