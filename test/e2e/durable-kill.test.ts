import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  callSettled,
  deploymentArgs,
  getOperation,
  listOperations,
  runCli,
  startProviderProcess,
  waitForOperation,
  withTimeout,
  type ProviderMode,
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
  type ServerProcess,
  type Structured,
} from '../helpers/mcp-fixtures.js';

// A real server process is killed (SIGKILL, by itself, at a named fault point) while a worker carries
// a start_deployment through a real provider process; a fresh server on the same database must settle
// it without ever deploying twice. One fresh provider per case, so its deployment count is this
// case's count.

const MODES: readonly ProviderMode[] = ['key', 'reference', 'none'];

/** Server kill points (IDEM_TEST_FAULTS=<point>=kill), plus the provider's lost response. */
type Window = 'before_dispatch' | 'after_provider_reply' | 'after_receipt' | 'drop_response' | 'before_reply';
const WINDOWS: readonly Window[] = [
  'before_dispatch',
  'after_provider_reply',
  'after_receipt',
  'drop_response',
  'before_reply',
];

/** Whether the worker cannot know if the provider applied the request (without key or reference). */
const AMBIGUOUS: ReadonlySet<Window> = new Set(['before_dispatch', 'after_provider_reply', 'drop_response']);

/** Deployments the provider holds at the end, per window, when the outcome stays unknown (mode none). */
const UNKNOWN_DEPLOYMENTS: Partial<Record<Window, number>> = {
  before_dispatch: 0, // the attempt was recorded; the provider was never contacted
  after_provider_reply: 1,
  drop_response: 1,
};

const summary: string[] = [];
let clients: Client[] = [];

async function connect(server: ServerProcess): Promise<Client> {
  const client = await connectHttp(server.url);
  clients.push(client);
  return client;
}

beforeAll(() => ensureBuilt());

afterEach(async () => {
  await Promise.all(clients.map(closeQuietly));
  clients = [];
  await cleanup();
});

afterAll(async () => {
  await cleanup();
  console.log(`durable-kill: deployments per key\n${summary.join('\n')}`);
});

describe.each(MODES)('provider mode %s: a crash or lost response never deploys twice', (mode) => {
  it.each(WINDOWS)('%s', async (window) => {
    const dir = makeTempDir('idem-durable-kill-');
    const db = join(dir, 'idem.sqlite');
    const provider = await startProviderProcess(mode, join(dir, 'provider.sqlite'));
    const killed = window !== 'drop_response';
    // A short lease lets the next server take over a killed one's attempt quickly. Where no worker
    // dies holding a lease (before_reply's first server has none; drop_response kills nothing), a
    // longer one keeps a loaded machine's late renewal from interrupting the one attempt (in mode none
    // that is rightly outcome_unknown, which is not what these cases are about).
    const lease = window === 'before_reply' || !killed ? '5s' : '500ms';
    const serverArgs = [
      '--db',
      db,
      '--provider-url',
      provider.url,
      '--provider-mode',
      mode,
      '--worker-lease',
      lease,
      '--worker-poll',
      '50ms',
      '--deadline',
      '10s',
      '--attempt-timeout',
      '1s',
    ];
    if (!killed) await provider.arm({ kind: 'drop_response', route: 'create' });
    // before_reply kills the server while it builds the start call's reply. Its own worker could
    // already have dispatched the attempt by then (a race the load decides): the first server runs
    // without a worker, so this case is about the lost reply alone, and the next server does the work.
    let server = await startServerProcess({
      args: window === 'before_reply' ? [...serverArgs, '--no-worker'] : serverArgs,
      env: killed ? { IDEM_TEST_FAULTS: `${window}=kill` } : {},
    });
    let client = await connect(server);
    const args = deploymentArgs(`kill-${mode}-${window}-${randomUUID()}`, `svc-${mode}`, window);

    // 1. The first call: accepted at once, except when the server dies building its reply.
    const first = await callSettled(client, 'start_deployment', args);
    let operationId: string | undefined;
    if (window === 'before_reply') {
      expect(first.ok, 'the start call must lose its reply').toBe(false);
    } else {
      expect(first.ok, `start_deployment threw: ${first.ok ? '' : String(first.error)}`).toBe(true);
      if (first.ok) {
        expect(first.result.isError).toBe(false);
        expect(first.result.sc.status).toBe('accepted');
        expect(first.result.sc.operation_id).toMatch(/^op_/);
        operationId = first.result.sc.operation_id;
      }
    }

    // 2. The server kills itself at the fault point; a new one (no fault) opens the same database.
    if (killed) {
      const exit = await withTimeout(server.waitForExit(), 10_000, `server did not die at ${window}`);
      expect(exit.signal).toBe('SIGKILL');
      expect(server.logs().some((l) => l.event === 'idem.test_fault_armed' && l.point === window)).toBe(true);
      server = await startServerProcess({ args: serverArgs });
      client = await connect(server);
    }

    // 3. The retry with the same key and arguments names the same operation, whatever its state.
    const retry = await callTool(client, 'start_deployment', args);
    expect(['succeeded', 'running', 'outcome_unknown']).toContain(retry.sc.status);
    if (retry.sc.status === 'succeeded') {
      expect(retry.isError).toBe(false);
      expect(retry.sc.replayed).toBe(true);
    } else {
      expect(retry.isError).toBe(true);
      expect(retry.sc.error?.code).toBe(retry.sc.status === 'running' ? 'in_progress' : 'outcome_unknown');
    }
    if (operationId === undefined) operationId = retry.sc.operation_id;
    expect(retry.sc.operation_id).toBe(operationId);
    const opId = operationId as string;
    const recorded = await listOperations(db);
    expect(recorded.map((op) => op.operation_id)).toEqual([opId]);

    // 4. It settles.
    const final = await waitForOperation(client, opId, { timeoutMs: 10_000 });
    const deployments = await provider.deployments();
    const expected = mode === 'none' && AMBIGUOUS.has(window) ? 'outcome_unknown' : 'succeeded';
    const providerEvents = (event: string) => provider.logs().filter((l) => l.event === event).length;
    summary.push(
      `${mode}/${window} deployments=${deployments.length} final=${final.status}` +
        ` attempts=${final.attempts} provider_replays=${providerEvents('provider.deployment_replayed')}` +
        ` retry=${retry.sc.status}`,
    );
    expect(final.status, JSON.stringify(final)).toBe(expected);
    expect(deployments.length).toBeLessThanOrEqual(1);

    const again = await getOperation(client, opId);
    const replay = await callTool(client, 'start_deployment', args);
    expect(replay.sc.operation_id).toBe(opId);
    if (expected === 'succeeded') {
      expect(deployments).toHaveLength(1);
      const deploymentId = (deployments[0] as { deployment_id: string }).deployment_id;
      for (const read of [final, again, replay.sc]) expect(read.resource_id).toBe(deploymentId);
      expect(again.status).toBe('succeeded');
      expect(replay.isError).toBe(false);
      expect(replay.sc).toMatchObject({ status: 'succeeded', replayed: true, deployment_id: deploymentId });
      expect(final.result).toMatchObject({ deployment_id: deploymentId, service: `svc-${mode}` });
      if (mode === 'reference') expect(deployments[0]?.client_reference).toBe(`idem-${opId}`);
      // Key mode: every attempt after the provider had applied the first one was a replay there
      // (usually one; on a loaded machine a lease may lapse and a third attempt replay again).
      if (mode === 'key' && (window === 'after_provider_reply' || window === 'drop_response')) {
        expect(final.attempts).toBeGreaterThanOrEqual(2);
        const replays = (final.attempts as number) - 1;
        await waitForLogLines(
          () => provider.logs(),
          (l) => l.event === 'provider.deployment_replayed',
          replays,
        );
        expect(providerEvents('provider.deployment_replayed')).toBe(replays);
      }
    } else {
      expect(deployments).toHaveLength(UNKNOWN_DEPLOYMENTS[window] as number);
      expect(final.next_action).toMatch(/\S/);
      expect(final.resource_id).toBeUndefined();
      expect(again).toMatchObject({ status: 'outcome_unknown', next_action: final.next_action });
      expect(replay.isError).toBe(true);
      expect(replay.sc.status).toBe('outcome_unknown');
      expect(replay.sc.error).toMatchObject({ code: 'outcome_unknown', retryable: false });
      expect(replay.sc.next_action).toMatch(/\S/);
    }
    // Nothing more happens afterwards: no late attempt deploys again.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await provider.deployments()).toHaveLength(deployments.length);

    if (mode === 'none' && window === 'after_provider_reply') {
      await operatorResolves(client, db, opId, (deployments[0] as { deployment_id: string }).deployment_id);
    }
  });
});

/** An operator checks the provider by hand and settles the outcome_unknown operation with the CLI. */
async function operatorResolves(client: Client, db: string, opId: string, deploymentId: string) {
  const resolved = await runCli([
    'ops',
    'resolve',
    opId,
    '--succeeded',
    '--resource-id',
    deploymentId,
    '--db',
    db,
    '--by',
    'tester',
  ]);
  expect(resolved.code, resolved.stderr).toBe(0);
  expect(JSON.parse(resolved.stdout)).toMatchObject({
    status: 'succeeded',
    operation_id: opId,
    resource_id: deploymentId,
    resolved_by: 'tester',
  });

  const op: Structured = await getOperation(client, opId);
  expect(op).toMatchObject({
    status: 'succeeded',
    operation_id: opId,
    resource_id: deploymentId,
    resolved_by: 'tester',
  });
  expect(op.resolved_at).toMatch(/^\d{4}-\d\d-\d\dT/);
  expect(op.error).toBeUndefined();

  // A settled operation cannot be resolved again.
  const twice = await runCli(['ops', 'resolve', opId, '--failed', '--reason', 'second thoughts', '--db', db]);
  expect(twice.code).toBe(1);
  expect(twice.stderr).toMatch(/is succeeded; only an outcome_unknown operation can be resolved/);
  expect((await getOperation(client, opId)).status).toBe('succeeded');
}
