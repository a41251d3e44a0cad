import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toolDeclaration } from '../../packages/idem/src/mcp/tool-declaration.js';
import { systemClock } from '../../packages/idem/src/core/clock.js';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import { runCli } from '../helpers/durable-fixtures.js';
import { cleanup, ensureBuilt, makeTempDir } from '../helpers/mcp-fixtures.js';
import {
  callStart,
  durableExecutor,
  openTestStore,
  startDeployment,
  startDurable,
  type TestStore,
} from '../helpers/store-fixtures.js';
import { POSTGRES_URL, postgresAvailable, openPostgresTestStore } from '../helpers/postgres-fixtures.js';
import type { JsonObject } from '../../packages/idem/src/core/json.js';
import type { DurableOperation } from '../../packages/idem/src/executor/executor.js';
import { startAttempt, transition } from '../../packages/idem/src/operations/ledger-transitions.js';
import { succeededResult } from '../../packages/idem/src/core/success-result.js';

const DAY = 24 * 60 * 60 * 1000;
const ARGS = { service: 'api', version: '1.4.2' };

let dir: string;

beforeAll(() => {
  ensureBuilt();
  dir = makeTempDir('idem-cli-ledger-');
});

afterAll(cleanup);

/** A start_deployment the worker failed (the provider timed out), in a new database file. */
async function failedDeployment(dbPath: string, key: string): Promise<OperationRecord> {
  const t = openTestStore({ path: dbPath });
  try {
    const op = await startDurable(durableExecutor(t.store), { key, args: ARGS });
    const now = systemClock.now();
    await t.store.ledger.claim({ workerId: 'w1', now, leaseMs: 60_000 });
    const failed = await transition(t.store.ledger, op.operationId, {
      workerId: 'w1',
      from: ['accepted'],
      to: 'failed',
      now,
      patch: {
        error: { code: 'internal', message: 'deadline exhausted after 3 attempts: throttled (HTTP 503)' },
        expiresAt: now + DAY,
        releaseLease: true,
      },
    });
    if (failed === undefined) throw new Error('the failure was not recorded');
    return failed;
  } finally {
    await t.close();
  }
}

describe('idem ops resolve --correct', () => {
  it('corrects a failed deployment to succeeded, with the audit trail, and replays then return it', async () => {
    const dbPath = join(dir, 'correct.sqlite');
    const op = await failedDeployment(dbPath, 'deploy-1');
    const id = op.operationId;

    const plain = await runCli([
      'ops',
      'resolve',
      id,
      '--succeeded',
      '--resource-id',
      'dep_x',
      '--db',
      dbPath,
    ]);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toContain(`is failed; only an outcome_unknown operation can be resolved`);
    expect(plain.stderr).toContain(
      `idem ops resolve ${id} --correct --succeeded --resource-id R --reason TEXT`,
    );

    const toFailed = await runCli([
      'ops',
      'resolve',
      id,
      '--correct',
      '--failed',
      '--reason',
      'x',
      '--db',
      dbPath,
    ]);
    expect(toFailed.code).toBe(2);
    expect(toFailed.stderr).toContain('--correct corrects to --succeeded only');
    const noReason = await runCli([
      'ops',
      'resolve',
      id,
      '--correct',
      '--succeeded',
      '--resource-id',
      'dep_x',
      '--db',
      dbPath,
    ]);
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toContain('--correct needs --reason TEXT');

    const corrected = await runCli([
      'ops',
      'resolve',
      id,
      '--correct',
      '--succeeded',
      '--resource-id',
      'dep_x',
      '--reason',
      'the provider lists dep_x with our key',
      '--by',
      'alice',
      '--db',
      dbPath,
    ]);
    expect(corrected.code, corrected.stderr).toBe(0);
    const shown = JSON.parse(corrected.stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({
      status: 'succeeded',
      resource_id: 'dep_x',
      resolved_by: 'alice',
      result: {
        status: 'succeeded',
        operation_id: id,
        resource_id: 'dep_x',
        deployment_id: 'dep_x',
        service: 'api',
        version: '1.4.2',
      },
      audit: [
        {
          action: 'correct',
          by: 'alice',
          at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
          from: 'failed',
          to: 'succeeded',
          reason: 'the provider lists dep_x with our key',
          resource_id: 'dep_x',
          previous_error: { code: 'internal', message: op.error?.message },
        },
      ],
    });
    expect(shown.error).toBeUndefined();

    const show = await runCli(['ops', 'show', id, '--db', dbPath]);
    expect(show.code).toBe(0);
    expect(JSON.parse(show.stdout)).toMatchObject({ audit: shown.audit, result: shown.result });

    // A success a person settled can be corrected by a person, with the result it replaces audited.
    const twice = await runCli([
      ...['ops', 'resolve', id, '--correct', '--succeeded', '--resource-id', 'dep_y', '--reason', 'again'],
      ...['--by', 'bob', '--db', dbPath],
    ]);
    expect(twice.code, twice.stderr).toBe(0);
    const again = JSON.parse(twice.stdout) as { result: unknown; audit: unknown[] };
    expect(again.result).toMatchObject({ status: 'succeeded', resource_id: 'dep_y', deployment_id: 'dep_y' });
    expect(again.audit[1]).toMatchObject({
      action: 'correct',
      by: 'bob',
      from: 'succeeded',
      to: 'succeeded',
      reason: 'again',
      resource_id: 'dep_y',
      previous_result: shown.result,
    });
    shown.result = again.result;

    const t = openTestStore({ path: dbPath });
    try {
      const replay = await callStart(durableExecutor(t.store), { key: 'deploy-1', args: ARGS });
      expect(replay.ok && replay.replayed).toBe(true);
      expect(replay.ok && replay.result).toEqual(shown.result);
    } finally {
      await t.close();
    }
  }, 90_000); // six CLI processes one after another: seconds each on a loaded two-core machine
});

describe('idem ops dead-letters and requeue', () => {
  it('lists dead letters (no payloads), re-queues one, and refuses what is not a dead letter', async () => {
    const dbPath = join(dir, 'dead.sqlite');
    const t = openTestStore({ path: dbPath });
    let deadId: number;
    try {
      const operation = t.noteOperation({
        afterInsert: (context) => {
          void context.enqueue({
            destination: 'http://127.0.0.1:9/hooks',
            dedupKey: 'note-created:1',
            payload: { secret: 'do-not-print' },
          });
          void context.enqueue({
            destination: 'http://127.0.0.1:9/hooks',
            dedupKey: 'note-created:2',
            payload: {},
          });
        },
      });
      const run = await t.executor.run(operation, {
        principal: 'p',
        workspace: 'w',
        key: 'k1',
        args: { body: 'b' },
      });
      expect(run.ok).toBe(true);
      const now = systemClock.now();
      const [dead] = await t.store.outbox.claim({ workerId: 'd1', now, leaseMs: 60_000, limit: 1 });
      deadId = dead?.id ?? -1;
      await t.store.outbox.settle(deadId, 'd1', { kind: 'dead', at: now, error: 'http_410' });
    } finally {
      await t.close();
    }

    const listed = await runCli(['ops', 'dead-letters', '--db', dbPath]);
    expect(listed.code, listed.stderr).toBe(0);
    const lines = listed.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+DEDUP KEY\s+DESTINATION\s+ATTEMPTS\s+LAST ERROR\s+DEAD SINCE$/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(
      new RegExp(`^${deadId}\\s+note-created:1\\s+http://127.0.0.1:9/hooks\\s+1\\s+http_410\\s+\\d{4}-`),
    );
    const json = await runCli(['ops', 'dead-letters', '--json', '--db', dbPath]);
    expect(JSON.parse(json.stdout)).toEqual([
      {
        id: deadId,
        dedup_key: 'note-created:1',
        destination: 'http://127.0.0.1:9/hooks',
        attempts: 1,
        last_error: 'http_410',
        created_at: expect.any(String),
        dead_at: expect.any(String),
      },
    ]);
    expect(listed.stdout + json.stdout).not.toContain('do-not-print');

    const requeued = await runCli(['ops', 'requeue', String(deadId), '--db', dbPath]);
    expect(requeued.code, requeued.stderr).toBe(0);
    expect(JSON.parse(requeued.stdout)).toMatchObject({
      id: deadId,
      dedup_key: 'note-created:1',
      attempts: 0,
    });
    expect(JSON.parse(requeued.stdout).dead_at).toBeUndefined();

    const empty = await runCli(['ops', 'dead-letters', '--db', dbPath]);
    expect(empty.stdout).toContain('(no dead letters)');
    const again = await runCli(['ops', 'requeue', String(deadId), '--db', dbPath]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`no dead letter ${deadId}`);
    const notANumber = await runCli(['ops', 'requeue', 'abc', '--db', dbPath]);
    expect(notANumber.code).toBe(2);
    const noId = await runCli(['ops', 'requeue', '--db', dbPath]);
    expect(noId.code).toBe(2);
  });
});

describe('idem sweep and the outbox', () => {
  it('deletes delivered messages older than --retention, and keeps the rest', async () => {
    const dbPath = join(dir, 'sweep-outbox.sqlite');
    const t = openTestStore({ path: dbPath });
    try {
      const operation = t.noteOperation({
        afterInsert: (context) => {
          for (const n of [1, 2])
            void context.enqueue({ destination: 'http://127.0.0.1:9/h', dedupKey: `m${n}`, payload: {} });
        },
      });
      expect(
        (await t.executor.run(operation, { principal: 'p', workspace: 'w', key: 'k', args: { body: 'b' } }))
          .ok,
      ).toBe(true);
      const now = systemClock.now();
      const [delivered] = await t.store.outbox.claim({ workerId: 'd1', now, leaseMs: 60_000, limit: 1 });
      await t.store.outbox.settle(delivered?.id ?? -1, 'd1', { kind: 'delivered', at: now - 60_000 });
    } finally {
      await t.close();
    }
    const kept = await runCli(['sweep', '--db', dbPath]);
    expect(kept.code, kept.stderr).toBe(0);
    expect(JSON.parse(kept.stdout)).toEqual({
      tombstoned: 0,
      tombstones_deleted: 0,
      outbox_deleted: 0,
      batches: 0,
    });
    const swept = await runCli(['sweep', '--db', dbPath, '--retention', '30s']);
    expect(JSON.parse(swept.stdout)).toEqual({
      tombstoned: 0,
      tombstones_deleted: 0,
      outbox_deleted: 1,
      batches: 1,
    });
  });
});

describe('--outbox-max-attempts', () => {
  it('is checked before anything is opened: serve --outbox-max-attempts 0 exits 2', async () => {
    const cwd = makeTempDir('idem-cli-outbox-');
    const db = join(cwd, 'idem.sqlite');
    const run = await runCli(['serve', '--db', db, '--outbox-max-attempts', '0']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--outbox-max-attempts must be an integer from 1');
    expect(existsSync(db)).toBe(false);
    const worker = await runCli([
      'worker',
      '--db',
      db,
      '--provider-url',
      'http://127.0.0.1:9',
      '--outbox-max-attempts',
      'x',
    ]);
    expect(worker.code).toBe(2);
    expect(existsSync(db)).toBe(false);
  });

  it('appears in the help of serve and worker', async () => {
    for (const command of ['serve', 'worker']) {
      const run = await runCli([command, '--help']);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('--outbox-max-attempts N');
    }
  });
});

/** The payment tool of a user's own server: the CLI knows no handler for it. */
const createPayment = { name: 'create_payment', version: 1 } as const;
const PAYMENT_ARGS = { amount_cents: 500, currency: 'eur' };
const PAYMENT_RESULT = z.object({
  payment_id: z.string(),
  amount_cents: z.number().int(),
  currency: z.string().optional(),
});

/**
 * A durable operation in `t` carried by a worker to `to`: `succeeded` with `fields` (what its
 * handler records), or `outcome_unknown` or `failed`.
 */
async function settledBy(
  t: TestStore,
  key: string,
  to: 'succeeded' | 'outcome_unknown' | 'failed',
  operation: DurableOperation = createPayment,
  fields: JsonObject = { payment_id: 'pay_auto', amount_cents: 500 },
): Promise<OperationRecord> {
  const args = operation === createPayment ? PAYMENT_ARGS : ARGS;
  const op = await startDurable(durableExecutor(t.store), { key, args }, operation);
  const now = systemClock.now();
  await t.store.ledger.claim({ workerId: 'w1', now, leaseMs: 60_000 });
  await startAttempt(t.store.ledger, op.operationId, {
    workerId: 'w1',
    attemptId: `att_${key}`,
    now,
    from: ['accepted'],
  });
  const done = await transition(t.store.ledger, op.operationId, {
    workerId: 'w1',
    from: ['running'],
    to,
    now,
    patch:
      to === 'succeeded'
        ? {
            resourceId: 'pay_auto',
            result: succeededResult(op.operationId, 'pay_auto', fields),
            expiresAt: now + DAY,
            releaseLease: true,
          }
        : {
            error: { code: to === 'failed' ? 'internal' : 'outcome_unknown', message: 'the reply was lost' },
            expiresAt: now + DAY,
            releaseLease: true,
          },
  });
  if (done?.status !== to) throw new Error(`the ${to} was not recorded`);
  return done;
}

interface Backend {
  readonly name: string;
  readonly available: boolean;
  /** A new store, and the CLI's options that open the same database. */
  open(tag: string): Promise<{ t: TestStore; db: string[] }>;
}

const BACKENDS: readonly Backend[] = [
  {
    name: 'SQLite',
    available: true,
    open: (tag) => {
      const path = join(dir, `${tag}.sqlite`);
      return Promise.resolve({ t: openTestStore({ path }), db: ['--db', path] });
    },
  },
  {
    name: 'PostgreSQL',
    available: postgresAvailable,
    open: async (tag) => {
      const schema = `idem_settle_${tag.replaceAll('-', '_')}_${Date.now().toString(36)}`;
      const t = await openPostgresTestStore({ path: schema });
      return { t, db: ['--db', POSTGRES_URL, '--db-schema', schema] };
    },
  },
];

for (const backend of BACKENDS) {
  describe.runIf(backend.available)(`idem ops resolve --result-json (${backend.name})`, () => {
    it("settles a user's own tool with the business fields of an automatic success; replays return them", async () => {
      const { t, db } = await backend.open('own-tool');
      try {
        // What create_payment's server stores when it registers the tool (durableTool does).
        await t.store.tools.declare(toolDeclaration('create_payment', 1, PAYMENT_RESULT, systemClock.now()));
        const automatic = await settledBy(t, 'pay-auto', 'succeeded');
        const op = await settledBy(t, 'pay-1', 'outcome_unknown');
        const resolved = await runCli([
          ...['ops', 'resolve', op.operationId, '--succeeded', '--resource-id', 'pay_found'],
          ...['--result-json', '{"payment_id":"pay_found","amount_cents":500}', '--by', 'bob', ...db],
        ]);
        expect(resolved.code, resolved.stderr).toBe(0);
        const shown = JSON.parse(resolved.stdout) as { result: Record<string, unknown> };
        expect(shown.result).toEqual({
          status: 'succeeded',
          operation_id: op.operationId,
          resource_id: 'pay_found',
          payment_id: 'pay_found',
          amount_cents: 500,
        });
        expect(Object.keys(shown.result).sort()).toEqual(Object.keys(automatic.result ?? {}).sort());

        const replay = await callStart(
          durableExecutor(t.store),
          { key: 'pay-1', args: PAYMENT_ARGS },
          createPayment,
        );
        expect(replay.ok && replay.replayed).toBe(true);
        expect(replay.ok && replay.result).toEqual(shown.result);
      } finally {
        await t.close();
      }
    });

    it('refuses result fields that do not fit, as a usage error, and writes nothing', async () => {
      const { t, db } = await backend.open('bad-fields');
      try {
        const own = await settledBy(t, 'pay-2', 'outcome_unknown');
        const deployment = await settledBy(t, 'deploy-2', 'failed', startDeployment);
        const correct = ['--correct', '--reason', 'found it'];
        const cases: [OperationRecord, string[], string][] = [
          [own, ['--result-json', '{"status":"failed"}'], 'is set by Idem itself'],
          [own, ['--result-json', '{"error":{"code":"x"}}'], 'is set by Idem itself'],
          [own, ['--result-json', '[1,2]'], '--result-json must be a JSON object'],
          [own, ['--result-json', '{payment_id: 1}'], '--result-json must be a JSON object'],
          [
            deployment,
            [...correct, '--result-json', '{"region":"eu"}'],
            'start_deployment results have no field "region"',
          ],
          [deployment, [...correct, '--result-json', '{"version":2}'], 'is a string, got a number'],
        ];
        for (const [op, flags, message] of cases) {
          const run = await runCli([
            ...['ops', 'resolve', op.operationId, '--succeeded', '--resource-id', 'r_1', ...flags],
            ...db,
          ]);
          expect(run.code, `${flags.join(' ')}: ${run.stderr}`).toBe(2);
          expect(run.stderr).toContain(message);
          expect(run.stdout).toBe('');
        }
        const failed = await runCli([
          ...['ops', 'resolve', own.operationId, '--failed', '--reason', 'absent'],
          ...['--result-json', '{"payment_id":"p"}', ...db],
        ]);
        expect(failed.code).toBe(2);
        expect(failed.stderr).toContain('--result-json goes with --succeeded only');
        expect(await t.store.ledger.get(own.operationId)).toEqual(own);
        expect(await t.store.ledger.get(deployment.operationId)).toEqual(deployment);

        // Fields that fit start_deployment's own are taken: the values it derives from its args.
        const fits = await runCli([
          ...['ops', 'resolve', deployment.operationId, '--succeeded', '--resource-id', 'dep_1'],
          ...[...correct, '--result-json', '{"version":"1.4.2"}', ...db],
        ]);
        expect(fits.code, fits.stderr).toBe(0);
        expect((JSON.parse(fits.stdout) as { result: unknown }).result).toEqual({
          status: 'succeeded',
          operation_id: deployment.operationId,
          resource_id: 'dep_1',
          deployment_id: 'dep_1',
          service: 'api',
          version: '1.4.2',
        });
      } finally {
        await t.close();
      }
    }, 90_000); // nine CLI processes one after another: seconds each on a loaded two-core machine
  });
}

describe('idem ops show: attempts_detail', () => {
  it('names each attempt in snake_case with ISO 8601 times, like every other field', async () => {
    const dbPath = join(dir, 'attempts.sqlite');
    const t = openTestStore({ path: dbPath });
    let id: string;
    const started = Date.UTC(2026, 11, 1, 10, 0, 0);
    try {
      const op = await startDurable(durableExecutor(t.store), { key: 'deploy-a', args: ARGS });
      id = op.operationId;
      const now = systemClock.now();
      await t.store.ledger.claim({ workerId: 'w1', now, leaseMs: 60_000 });
      const running = await startAttempt(t.store.ledger, id, {
        workerId: 'w1',
        attemptId: 'att_1',
        now: started,
        from: ['accepted'],
      });
      expect(running?.status).toBe('running');
      await t.store.ledger.finishAttempt('att_1', {
        endedAt: started + 1500,
        outcome: 'retryable_failure',
        detail: 'throttled (HTTP 503)',
      });
    } finally {
      await t.close();
    }
    const show = await runCli(['ops', 'show', id, '--db', dbPath]);
    expect(show.code, show.stderr).toBe(0);
    const shown = JSON.parse(show.stdout) as { attempts_detail: unknown };
    expect(shown.attempts_detail).toEqual([
      {
        attempt_id: 'att_1',
        number: 1,
        worker_id: 'w1',
        started_at: '2026-12-01T10:00:00.000Z',
        ended_at: '2026-12-01T10:00:01.500Z',
        outcome: 'retryable_failure',
        detail: 'throttled (HTTP 503)',
      },
    ]);
  });
});
