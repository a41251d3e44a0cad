import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/client';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callTool,
  cleanup,
  closeQuietly,
  connectHttp,
  ensureBuilt,
  makeTempDir,
  parseJsonLine,
  type ServerProcess,
  type ToolResult,
} from '../helpers/mcp-fixtures.js';
import {
  adminPool,
  alive,
  censusLine,
  dropSchema,
  failureLabel,
  freshSchema,
  isSuccess,
  logEvents,
  mapBounded,
  notesCensus,
  providerJson,
  randomInt,
  rpcCall,
  seededRandom,
  serverAppName,
  startKiller,
  startPgServer,
  startPgServers,
  startProviderProcess,
  type CallResult,
} from '../helpers/multi-fixtures.js';
import { postgresAvailable } from '../helpers/postgres-fixtures.js';

// Several `idem serve --db postgres://…` processes on one schema: the database, not process memory,
// makes each key run once. Every count is taken with SQL from the schema itself.

const INSTANCES = 3;

if (postgresAvailable) {
  describe('postgres multi-instance', () => {
    const schemas: string[] = [];
    let admin: pg.Pool;

    beforeAll(() => {
      ensureBuilt();
      admin = adminPool('multi');
    });

    afterAll(async () => {
      await cleanup();
      for (const schema of schemas) await dropSchema(admin, schema).catch(() => undefined);
      await admin.end();
    });

    function newSchema(): string {
      const schema = freshSchema();
      schemas.push(schema);
      return schema;
    }

    describe('three instances without workers, one schema', () => {
      let schema: string;
      let servers: ServerProcess[] = [];

      beforeAll(async () => {
        schema = newSchema();
        servers = await startPgServers(INSTANCES, schema);
      }, 60_000);

      it('100 concurrent calls with one key over three instances make one note', async () => {
        const clients: Client[][] = await Promise.all(
          servers.map((server) => Promise.all(Array.from({ length: 10 }, () => connectHttp(server.url)))),
        );
        try {
          const args = { idempotency_key: 't1-the-key', workspace: 'default', body: 't1-body' };
          const results: ToolResult[] = await Promise.all(
            Array.from({ length: 100 }, (_, i) => {
              const perInstance = clients[i % INSTANCES] as Client[];
              return callTool(perInstance[Math.floor(i / INSTANCES) % 10] as Client, 'create_note', args);
            }),
          );
          const failures = results.filter((r) => r.isError || r.sc.status !== 'succeeded');
          expect(failures.map((r) => r.sc)).toEqual([]);
          const first = results[0] as ToolResult;
          expect(new Set(results.map((r) => r.sc.operation_id))).toEqual(new Set([first.sc.operation_id]));
          expect(new Set(results.map((r) => r.sc.resource_id))).toEqual(new Set([first.sc.resource_id]));
          expect(results.filter((r) => r.sc.replayed === false)).toHaveLength(1);
          expect(results.filter((r) => r.sc.replayed === true)).toHaveLength(99);

          const census = await notesCensus(admin, schema, 't1-');
          expect(census).toMatchObject({ keys: 1, min: 1, max: 1, totalNotes: 1, orphans: 0, mismatched: 0 });
          expect(census.byKey.get('t1-the-key')).toEqual({
            operationId: first.sc.operation_id,
            resourceId: first.sc.resource_id,
            notes: 1,
          });
          console.log(censusLine(census, { calls: 100, instances: INSTANCES }));
        } finally {
          await Promise.all(clients.flat().map(closeQuietly));
        }
      }, 60_000);

      it('1000 keys, each sent 1 to 5 times to random instances, make one note per key', async () => {
        const random = seededRandom(20_240_601);
        const sends: { key: string; body: string; instance: number }[] = [];
        for (let i = 0; i < 1000; i += 1) {
          const times = randomInt(random, 1, 5);
          for (let t = 0; t < times; t += 1) {
            sends.push({ key: `t2-k${i}`, body: `t2-b${i}`, instance: randomInt(random, 0, INSTANCES - 1) });
          }
        }
        shuffle(sends, random);

        const results = await mapBounded(sends, 50, (send) =>
          rpcCall((servers[send.instance] as ServerProcess).url, 'create_note', {
            idempotency_key: send.key,
            workspace: 'default',
            body: send.body,
          }),
        );

        const failures = results
          .map((result, i) => ({ key: sends[i]?.key, result }))
          .filter(({ result }) => !isSuccess(result));
        expect(failures.slice(0, 5), `${failures.length} calls did not succeed`).toEqual([]);

        const census = await notesCensus(admin, schema, 't2-');
        const byKey = groupByKey(sends, results);
        for (const [key, successes] of byKey) {
          const recorded = census.byKey.get(key);
          expect(recorded, key).toBeDefined();
          for (const sc of successes) {
            expect(sc.operation_id, key).toBe(recorded?.operationId);
            expect(sc.resource_id, key).toBe(recorded?.resourceId);
          }
          expect(
            successes.filter((sc) => sc.replayed === false),
            key,
          ).toHaveLength(1);
        }
        expect(census).toMatchObject({
          keys: 1000,
          min: 1,
          max: 1,
          totalNotes: 1000,
          orphans: 0,
          mismatched: 0,
        });
        console.log(censusLine(census, { calls: sends.length }));
      }, 120_000);

      it('backends terminated under load: every call succeeds or fails retryably, and retries converge', async () => {
        const random = seededRandom(7_700_331);
        const windowMs = 2000;
        const sends: { key: string; body: string; offsetMs: number }[] = [];
        for (let i = 0; i < 300; i += 1) {
          const times = randomInt(random, 1, 3);
          for (let t = 0; t < times; t += 1) {
            sends.push({ key: `t3-k${i}`, body: `t3-b${i}`, offsetMs: Math.floor(random() * windowMs) });
          }
        }
        sends.sort((a, b) => a.offsetMs - b.offsetMs);

        const violations: { key: string; result: CallResult }[] = [];
        const codes = new Map<string, number>();
        const killer = await startKiller(serverAppName(schema), {
          intervalMs: 100,
          durationMs: windowMs + 200,
        });
        const start = Date.now();
        let chains: { success: CallResult | undefined; attempts: number }[];
        let killed = { terminated: 0, rounds: 0 };
        try {
          chains = await mapBounded(sends, 50, async (send) => {
            const wait = start + send.offsetMs - Date.now();
            if (wait > 0) await sleep(wait);
            // One send and its retries, all with the same key and arguments, to random instances.
            for (let attempt = 1; attempt <= 40; attempt += 1) {
              // A crashed instance is a failure of its own (asserted below): stop instead of retrying.
              if (!servers.every(alive)) return { success: undefined, attempts: attempt - 1 };
              const server = servers[randomInt(random, 0, INSTANCES - 1)] as ServerProcess;
              const result = await rpcCall(server.url, 'create_note', {
                idempotency_key: send.key,
                workspace: 'default',
                body: send.body,
              });
              if (isSuccess(result)) return { success: result, attempts: attempt };
              const label = failureLabel(result);
              codes.set(label, (codes.get(label) ?? 0) + 1);
              if (!retryableFailure(result)) violations.push({ key: send.key, result });
              const hinted = result.kind === 'result' ? (result.sc.error?.retry_after_ms ?? 0) : 0;
              await sleep(Math.max(hinted, Math.min(400, 20 * 2 ** attempt)) * (0.5 + random() / 2));
            }
            return { success: undefined, attempts: 40 };
          });
        } finally {
          killed = await killer.stop();
        }
        const { terminated, rounds } = killed;

        for (const server of servers) {
          // What is not a JSON log line is Node's own crash report.
          const tail = server
            .stderrLines()
            .filter((line) => parseJsonLine(line) === undefined)
            .slice(0, 12)
            .join('\n');
          expect(alive(server), `server on port ${server.port} died; stderr:\n${tail}`).toBe(true);
        }
        expect(violations.slice(0, 5), `${violations.length} non-retryable failures`).toEqual([]);
        const unconverged = chains.filter((chain) => chain.success === undefined);
        expect(unconverged, 'sends that never succeeded').toEqual([]);
        expect(terminated, 'the killer terminated server backends').toBeGreaterThan(0);

        const census = await notesCensus(admin, schema, 't3-');
        const byKey = groupByKey(
          sends,
          chains.map((chain) => chain.success as CallResult),
        );
        for (const [key, successes] of byKey) {
          const recorded = census.byKey.get(key);
          for (const sc of successes) {
            expect(sc.operation_id, key).toBe(recorded?.operationId);
            expect(sc.resource_id, key).toBe(recorded?.resourceId);
          }
          // The executing call's reply may be lost (outcome_unknown at COMMIT): at most one first run.
          expect(successes.filter((sc) => sc.replayed === false).length, key).toBeLessThanOrEqual(1);
        }
        expect(census).toMatchObject({
          keys: 300,
          min: 1,
          max: 1,
          totalNotes: 300,
          orphans: 0,
          mismatched: 0,
        });
        const retried = chains.filter((chain) => chain.attempts > 1).length;
        const attempts = chains.reduce((sum, chain) => sum + chain.attempts, 0);
        console.log(
          censusLine(census, {
            calls: sends.length,
            calls_needing_retries: retried,
            attempts,
            backends_terminated: terminated,
            killer_rounds: rounds,
          }),
        );
        console.log(
          `t3 non-success replies by kind: ${JSON.stringify(Object.fromEntries([...codes].sort()))}; ` +
            `idle_client_error logs: ${servers.map((s) => logEvents(s, 'postgres.idle_client_error').length).join('/')}`,
        );
      }, 90_000);
    });

    it('a worker instance SIGKILLed mid-deployment: the others take over, one deployment per operation', async () => {
      const schema = newSchema();
      const provider = await startProviderProcess(join(makeTempDir('idem-multi-'), 'p.sqlite'));
      // Every create is applied, then its reply waits: operations stay in flight long enough to kill one.
      await providerJson(`${provider.url}/_faults`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ kind: 'delay', route: 'create', delayMs: 400, times: 10_000 }),
      });
      const workerArgs = ['--provider-url', provider.url, '--worker-lease', '1s', '--worker-poll', '50ms'];
      const servers = await startPgServers(INSTANCES, schema, workerArgs);

      const accepted = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          rpcCall((servers[i % INSTANCES] as ServerProcess).url, 'start_deployment', {
            idempotency_key: `t4-k${i}`,
            workspace: 'default',
            service: `svc-${i}`,
            version: '1.0.0',
          }),
        ),
      );
      const operationIds = accepted.map((result) => {
        expect(result.kind === 'result' && !result.isError ? result.sc.status : result).toBe('accepted');
        return (result as { sc: { operation_id: string } }).sc.operation_id;
      });
      expect(new Set(operationIds).size).toBe(30);

      // The victim's worker id comes from its first attempt log; then wait for an attempt of it in flight.
      const victim = servers[0] as ServerProcess;
      const workerId = await waitFor('the victim finished a first attempt', 10_000, () => {
        const line = logEvents(victim, 'op.attempt')[0];
        return typeof line?.worker_id === 'string' ? line.worker_id : undefined;
      });
      // Started under 150 ms ago: its provider reply is still held back for at least 250 ms.
      const inFlight = await waitFor('an attempt of the victim in flight', 10_000, async () => {
        const { rows } = await admin.query<{ operation_id: string }>(
          `SELECT operation_id FROM ${schema}.idem_attempts
           WHERE worker_id = $1 AND ended_at IS NULL AND started_at > $2`,
          [workerId, Date.now() - 150],
        );
        return rows[0]?.operation_id;
      });
      await victim.kill('SIGKILL');
      const { rows: atKill } = await admin.query<{ status: string }>(
        `SELECT status FROM ${schema}.idem_operations WHERE operation_id = $1`,
        [inFlight],
      );
      expect(atKill[0]?.status, 'the victim died with the operation unfinished').toBe('running');
      const survivors = servers.slice(1);

      // Another instance's worker takes the operation over once the victim's 1 s lease has expired.
      const takenBy = await waitFor('another worker takes the in-flight operation over', 15_000, async () => {
        const { rows } = await admin.query<{ worker_id: string }>(
          `SELECT worker_id FROM ${schema}.idem_attempts WHERE operation_id = $1 AND worker_id <> $2`,
          [inFlight, workerId],
        );
        return rows[0]?.worker_id;
      });
      expect(takenBy).not.toBe(workerId);

      const restarted = await startPgServer(schema, workerArgs);
      const live = [...survivors, restarted];
      let round = 0;
      const finals = await waitFor('all 30 operations final', 20_000, async () => {
        const views = await Promise.all(
          operationIds.map((operationId) => {
            round += 1;
            return rpcCall((live[round % live.length] as ServerProcess).url, 'get_operation', {
              operation_id: operationId,
            });
          }),
        );
        const statuses = views.map((view) => (view.kind === 'result' ? String(view.sc.status) : view.kind));
        return statuses.every((s) => ['succeeded', 'failed', 'outcome_unknown', 'cancelled'].includes(s))
          ? views
          : undefined;
      });
      const summary = finals.map((view) => (view.kind === 'result' ? view.sc.status : view.kind));
      expect(summary).toEqual(Array.from({ length: 30 }, () => 'succeeded'));

      const { deployments } = await providerJson<{ deployments: { deployment_id: string }[] }>(
        `${provider.url}/deployments`,
      );
      expect(deployments).toHaveLength(30);
      const resourceIds = finals.map((view) => (view as { sc: { resource_id: string } }).sc.resource_id);
      expect(new Set(resourceIds)).toEqual(new Set(deployments.map((d) => d.deployment_id)));

      // The victim never finished its attempt: the worker that took over closed it. The operation
      // still succeeded, once, through another worker.
      const { rows: attempts } = await admin.query<{
        worker_id: string;
        ended_at: string | null;
        outcome: string;
      }>(
        `SELECT worker_id, ended_at, outcome FROM ${schema}.idem_attempts WHERE operation_id = $1 ORDER BY number`,
        [inFlight],
      );
      // (On a loaded machine an earlier attempt of another worker may have lost its lease first: the
      // victim's is its last one, not necessarily the first.)
      const victimAt = attempts.map((attempt) => attempt.worker_id).lastIndexOf(workerId);
      expect(victimAt, JSON.stringify(attempts)).toBeGreaterThanOrEqual(0);
      expect(attempts[victimAt]).toMatchObject({ worker_id: workerId, outcome: 'interrupted' });
      expect(attempts[victimAt]?.ended_at).not.toBeNull();
      expect(attempts.slice(victimAt + 1).some((attempt) => attempt.worker_id !== workerId)).toBe(true);
      for (const server of live) expect(alive(server)).toBe(true);
      console.log(
        `t4 deployments=${deployments.length} operations=30 victim_attempts_in_flight_at_kill=1 ` +
          `takeover_attempts=${attempts.length - 1}`,
      );
    }, 60_000);
  });
} else {
  describe('postgres multi-instance', () => {
    it('is not run: PostgreSQL unreachable (see stderr)', () => expect(postgresAvailable).toBe(false));
  });
}

function retryableFailure(result: CallResult): boolean {
  if (result.kind === 'transport') return true;
  if (result.kind !== 'result') return false;
  const error = result.sc.error;
  return (
    error !== undefined &&
    error.retryable === true &&
    ['busy', 'unavailable', 'outcome_unknown'].includes(error.code)
  );
}

function shuffle<T>(items: T[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
}

/** The successful replies per key (sends[i] answered by results[i]). */
function groupByKey(
  sends: readonly { key: string }[],
  results: readonly CallResult[],
): Map<string, { operation_id?: string; resource_id?: string; replayed?: boolean }[]> {
  const byKey = new Map<string, { operation_id?: string; resource_id?: string; replayed?: boolean }[]>();
  sends.forEach((send, i) => {
    const result = results[i];
    if (result === undefined || !isSuccess(result)) return;
    byKey.set(send.key, [...(byKey.get(send.key) ?? []), result.sc]);
  });
  return byKey;
}

/** Polls `probe` every 50 ms until it returns a value; fails with `what` after `timeoutMs`. */
async function waitFor<T>(
  what: string,
  timeoutMs: number,
  probe: () => T | undefined | Promise<T | undefined>,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await sleep(50);
  }
}
