import { randomUUID } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  deploymentArgs,
  getOperation,
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
  type Structured,
} from '../helpers/mcp-fixtures.js';

// Issue 38, point 3: a deployment provider that refuses connections when the operations are
// accepted and accepts them again before their deadline loses none of them. The provider is the
// real `idem provider` process, reached through a gate in this process: nothing listens on the
// gate's port until it opens (every connection refused, as when the provider is down), then it
// forwards every request to the provider. The provider's own records are the ground truth.

let clients: Client[] = [];
let gates: Gate[] = [];

beforeAll(() => ensureBuilt());

afterEach(async () => {
  await Promise.all(clients.map(closeQuietly));
  clients = [];
  await Promise.all(gates.map((gate) => gate.close()));
  gates = [];
  await cleanup();
});

afterAll(cleanup);

/**
 * A port that refuses connections until `open()`, then forwards each HTTP request to the provider
 * at `target` (with the provider's own `Host`, which it checks) and its answer back.
 */
interface Gate {
  readonly port: number;
  /** Starts listening; resolves once connections are accepted, with the wall time of that moment. */
  open(): Promise<number>;
  close(): Promise<void>;
}

async function gate(target: string): Promise<Gate> {
  const port = await freePort();
  const upstream = new URL(target);
  let server: Server | undefined;
  const made: Gate = {
    port,
    open: () =>
      new Promise((resolve, reject) => {
        server = createServer((req, res) => {
          const forwarded = request(
            {
              hostname: upstream.hostname,
              port: upstream.port,
              method: req.method,
              path: req.url,
              headers: { ...req.headers, host: upstream.host },
            },
            (answer) => {
              res.writeHead(answer.statusCode ?? 502, answer.headers);
              answer.pipe(res);
            },
          );
          // The provider never fails here; a broken forward ends the caller's connection (ambiguous).
          forwarded.on('error', () => res.destroy());
          req.pipe(forwarded);
        });
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => resolve(Date.now()));
      }),
    close: async () => {
      if (server === undefined) return;
      server.closeAllConnections();
      await new Promise((resolve) => server?.close(resolve));
    },
  };
  gates.push(made);
  return made;
}

interface Run {
  readonly provider: ProviderProcess;
  readonly client: Client;
  readonly gate: Gate;
  /** Operation ids with their deadlines (epoch ms), in acceptance order. */
  readonly accepted: { operationId: string; deadlineAt: number }[];
}

/** The provider, the gate (closed), `idem serve` in front of the gate, and `count` accepted operations. */
async function acceptWhileDown(
  count: number,
  deadlineMs: number,
  flags: Record<string, string>,
): Promise<Run> {
  const dir = makeTempDir('idem-deadline-');
  const provider = await startProviderProcess('key', join(dir, 'provider.sqlite'));
  const closed = await gate(provider.url);
  const server = await startServerProcess({
    args: Object.entries({
      '--db': join(dir, 'idem.sqlite'),
      '--provider-url': `http://127.0.0.1:${closed.port}`,
      '--provider-mode': 'key',
      ...flags,
    }).flat(),
  });
  const client = await connectHttp(server.url);
  clients.push(client);
  const accepted: Run['accepted'] = [];
  for (let i = 0; i < count; i += 1) {
    const result = await callTool(
      client,
      'start_deployment',
      deploymentArgs(randomUUID(), `svc-${i}`, '1.0.0'),
    );
    expect(result.isError, JSON.stringify(result.sc)).toBe(false);
    expect(result.sc.status).toBe('accepted');
    const operationId = result.sc.operation_id as string;
    const view = await getOperation(client, operationId);
    accepted.push({ operationId, deadlineAt: Date.parse(view.created_at as string) + deadlineMs });
  }
  return { provider, client, gate: closed, accepted };
}

/** Opens the gate `leadMs` before the earliest deadline; fails if the test process was too slow to. */
async function openBefore(run: Run, leadMs: number, slackMs: number): Promise<void> {
  const earliest = Math.min(...run.accepted.map((a) => a.deadlineAt));
  await sleep(Math.max(0, earliest - leadMs - Date.now()));
  const openedAt = await run.gate.open();
  // The promise holds for a provider back early enough; make sure the test gave it that.
  expect(earliest - openedAt, 'the gate opened too late for the test to mean anything').toBeGreaterThan(
    leadMs - slackMs,
  );
}

/**
 * Waits out the latest deadline without a request (polls would compete with the worker for the
 * server's event loop, on a loaded machine), then reads each operation until it is final.
 */
async function settleAll(run: Run, timeoutMs: number): Promise<Structured[]> {
  const latest = Math.max(...run.accepted.map((a) => a.deadlineAt));
  await sleep(Math.max(0, latest + 200 - Date.now()));
  const finals: Structured[] = [];
  for (const a of run.accepted) finals.push(await waitForOperation(run.client, a.operationId, { timeoutMs }));
  return finals;
}

function summary(finals: Structured[]): string {
  return JSON.stringify(finals.map((op) => ({ status: op.status, attempts: op.attempts, error: op.error })));
}

describe('a provider that refuses connections at acceptance and is back before the deadline', () => {
  it('4 s deadline, back 1.5 s before it: all 8 operations succeed, one deployment each', async () => {
    const run = await acceptWhileDown(8, 4_000, { '--deadline': '4s' });
    await openBefore(run, 1_500, 700);

    const finals = await settleAll(run, 15_000);
    expect(
      finals.map((op) => op.status),
      summary(finals),
    ).toEqual(finals.map(() => 'succeeded'));
    const deployments = await run.provider.deployments();
    expect(deployments.map((d) => d.service).sort()).toEqual(finals.map((_, i) => `svc-${i}`).sort());
  });

  it('the 30 s default, back 1.9 s before it: all 10 operations succeed, one deployment each', async () => {
    const run = await acceptWhileDown(10, 30_000, {});
    await openBefore(run, 1_900, 900);

    const finals = await settleAll(run, 20_000);
    expect(
      finals.map((op) => op.status),
      summary(finals),
    ).toEqual(finals.map(() => 'succeeded'));
    const deployments = await run.provider.deployments();
    expect(deployments.map((d) => d.service).sort()).toEqual(finals.map((_, i) => `svc-${i}`).sort());
  }, 60_000);
});
