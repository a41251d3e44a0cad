import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { systemClock } from '../../packages/idem/src/core/clock.js';
import type { JsonObject } from '../../packages/idem/src/core/json.js';
import { silentLogger } from '../../packages/idem/src/core/logger.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { durableTool } from '../../packages/idem/src/mcp/idempotent-tool.js';
import type { IdemTool } from '../../packages/idem/src/mcp/idem-tool.js';
import {
  requestCancel,
  startAttempt,
  transition,
} from '../../packages/idem/src/operations/ledger-transitions.js';
import { succeededResult } from '../../packages/idem/src/core/success-result.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import { consoleApp } from '../../packages/idem-cli/src/console/console-app.js';
import { hostOriginPolicy } from '../../packages/idem-cli/src/server/host-origin-policy.js';
import {
  requestCancelAsOperator,
  resolveOperationAsOperator,
  type ResolveRequest,
} from '../../packages/idem-cli/src/ops/operator-actions.js';
import { OperatorActionError } from '../../packages/idem-cli/src/ops/operator-error.js';
import { runCli } from '../helpers/durable-fixtures.js';
import { cleanup, ensureBuilt, makeTempDir } from '../helpers/mcp-fixtures.js';

/**
 * A durable tool of a user's own (not the reference server's), create_payment, whose results
 * declare payment_id, amount_cents and currency: what a person settles through the console or
 * `idem ops`, in a process that never registered the tool, is checked against what its server
 * stored, and nothing a person does leaves a key without a valid answer.
 */
const RESULT = z.object({
  payment_id: z.string(),
  amount_cents: z.number().int(),
  currency: z.string().regex(/^[A-Z]{3}$/),
});
const ARGS = { amount_cents: 500, currency: 'EUR' };
const GOOD = { payment_id: 'pay_1', amount_cents: 500, currency: 'EUR' };
const HOUR = 3_600_000;

let dir: string;

beforeAll(() => {
  ensureBuilt();
  dir = makeTempDir('idem-settle-');
});
afterAll(cleanup);

/** The user's server: its store and create_payment, registered as its own code would. */
function paymentServer(path: string): { store: IdemStore; tool: IdemTool } {
  const store = new SqliteStore(openSqlite(path));
  const executor = new Executor<unknown>({
    store,
    logger: silentLogger,
    authorize: () => true,
    inFlightWaitMs: 0,
  });
  const tool = durableTool(executor, {
    name: 'create_payment',
    version: 1,
    description: 'Creates a payment.',
    inputSchema: { amount_cents: z.number().int().positive(), currency: z.string().regex(/^[A-Z]{3}$/) },
    resultSchema: RESULT,
  });
  return { store, tool };
}

/** Another process's view of the same database: the console's or `idem ops`'s (no tool registered). */
function opsStore(path: string): IdemStore {
  return new SqliteStore(openSqlite(path));
}

async function call(tool: IdemTool, key: string) {
  return tool.handle({ workspace: 'ws-1', idempotency_key: key, ...ARGS }, { principal: 'alice' });
}

/** A retry's answer is valid: it fits the tool's exact output schema (what an MCP client checks it against). */
async function expectValidAnswer(tool: IdemTool, key: string, what: string): Promise<JsonObject> {
  const answer = await call(tool, key);
  const parsed = tool.outputSchema.safeParse(answer.structuredContent);
  expect(parsed.success, `${what}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
  expect(answer.structuredContent.error, what).not.toMatchObject({ code: 'payload_conflict' });
  return answer.structuredContent;
}

const STATES = [
  'accepted',
  'running',
  'cancel_requested',
  'outcome_unknown',
  'succeeded',
  'succeeded by a person',
  'failed',
  'cancelled',
] as const;
type State = (typeof STATES)[number];

/** Accepts an operation through the tool and carries it to `state` as the worker (or a person) would. */
async function operationIn(server: { store: IdemStore; tool: IdemTool }, state: State, key: string) {
  const accepted = await call(server.tool, key);
  const id = accepted.structuredContent.operation_id as string;
  const ledger = server.store.ledger;
  const now = systemClock.now();
  if (state === 'accepted') return id;
  if (state === 'cancel_requested') {
    await requestCancel(ledger, id, now);
    return id;
  }
  const claimed = await ledger.claim({ workerId: 'w1', now, leaseMs: HOUR });
  expect(claimed?.operationId).toBe(id);
  if (state === 'cancelled') {
    await requestCancel(ledger, id, now);
    await transition(ledger, id, {
      workerId: 'w1',
      from: ['cancel_requested'],
      to: 'cancelled',
      now,
      patch: { expiresAt: now + HOUR, releaseLease: true },
    });
    return id;
  }
  await startAttempt(ledger, id, { workerId: 'w1', attemptId: `att_${key}`, now, from: ['accepted'] });
  if (state === 'running') return id;
  if (state === 'succeeded')
    await transition(ledger, id, {
      workerId: 'w1',
      from: ['running'],
      to: 'succeeded',
      now,
      patch: {
        resourceId: 'pay_w',
        result: succeededResult(id, 'pay_w', { ...GOOD, payment_id: 'pay_w' }),
        expiresAt: now + HOUR,
        releaseLease: true,
      },
    });
  else
    await transition(ledger, id, {
      workerId: 'w1',
      from: ['running'],
      to: state === 'failed' ? 'failed' : 'outcome_unknown',
      now,
      patch: {
        error: { code: state === 'failed' ? 'internal' : 'outcome_unknown', message: 'the reply was lost' },
        expiresAt: now + HOUR,
        releaseLease: true,
      },
    });
  if (state === 'succeeded by a person')
    await resolveOperationAsOperator(
      server.store,
      settle(id, { to: 'succeeded', resourceId: 'pay_p', fields: GOOD }),
    );
  return id;
}

function settle(operationId: string, request: Partial<ResolveRequest>): ResolveRequest {
  return {
    operationId,
    to: 'succeeded',
    by: 'olivia',
    now: systemClock.now(),
    retentionMs: HOUR,
    ...request,
  };
}

/** Every action a person has (the console's and idem ops's), with good and bad result fields. */
const ACTIONS: ReadonlyArray<[string, (store: IdemStore, id: string) => Promise<unknown>]> = [
  [
    'resolve succeeded, declared fields',
    (s, id) => resolveOperationAsOperator(s, settle(id, { resourceId: 'pay_1', fields: GOOD })),
  ],
  [
    'resolve succeeded, no fields',
    (s, id) => resolveOperationAsOperator(s, settle(id, { resourceId: 'pay_1' })),
  ],
  [
    'resolve succeeded, an undeclared field',
    (s, id) =>
      resolveOperationAsOperator(s, settle(id, { resourceId: 'dep_1', fields: { deployment_id: 'dep_1' } })),
  ],
  [
    'resolve succeeded, a field of the wrong type',
    (s, id) =>
      resolveOperationAsOperator(s, settle(id, { resourceId: 'pay_1', fields: { amount_cents: '500' } })),
  ],
  [
    'resolve succeeded, a value its pattern refuses',
    (s, id) =>
      resolveOperationAsOperator(s, settle(id, { resourceId: 'pay_1', fields: { currency: 'eur' } })),
  ],
  [
    'resolve failed',
    (s, id) => resolveOperationAsOperator(s, settle(id, { to: 'failed', reason: 'no such payment' })),
  ],
  [
    'correct to succeeded, declared fields',
    (s, id) =>
      resolveOperationAsOperator(
        s,
        settle(id, {
          correct: true,
          reason: 'found it',
          resourceId: 'pay_2',
          fields: { ...GOOD, payment_id: 'pay_2' },
        }),
      ),
  ],
  [
    'correct to succeeded, an undeclared field',
    (s, id) =>
      resolveOperationAsOperator(
        s,
        settle(id, {
          correct: true,
          reason: 'found it',
          resourceId: 'dep_2',
          fields: { deployment_id: 'dep_2' },
        }),
      ),
  ],
  [
    'correct to failed',
    (s, id) => resolveOperationAsOperator(s, settle(id, { correct: true, to: 'failed', reason: 'x' })),
  ],
  [
    'cancel',
    (s, id) =>
      requestCancelAsOperator(s, {
        operationId: id,
        reason: 'not wanted',
        by: 'olivia',
        now: systemClock.now(),
      }),
  ],
];

describe("settling a user's own durable tool", () => {
  it('refuses {"deployment_id":"dep_1"} in a process that never registered create_payment, and writes nothing', async () => {
    const path = join(dir, 'refuse.sqlite');
    const server = paymentServer(path);
    const ops = opsStore(path);
    try {
      const id = await operationIn(server, 'outcome_unknown', 'pay-refuse');
      const before = await ops.ledger.get(id);
      await expect(
        resolveOperationAsOperator(
          ops,
          settle(id, { resourceId: 'dep_1', fields: { deployment_id: 'dep_1' } }),
        ),
      ).rejects.toMatchObject({
        kind: 'usage',
        field: 'fields',
        message: expect.stringContaining('create_payment results have no field "deployment_id"'),
      });
      expect(await ops.ledger.get(id)).toEqual(before);

      // The command line, a process of its own, refuses it the same way (exit 2, nothing written).
      const cli = await runCli([
        ...['ops', 'resolve', id, '--succeeded', '--resource-id', 'dep_1'],
        ...['--result-json', '{"deployment_id":"dep_1"}', '--db', path],
      ]);
      expect(cli.code, cli.stderr).toBe(2);
      expect(cli.stderr).toContain(
        'create_payment results have no field "deployment_id"; its fields are payment_id, amount_cents, currency',
      );
      expect(await ops.ledger.get(id)).toEqual(before);

      const fits = await runCli([
        ...['ops', 'resolve', id, '--succeeded', '--resource-id', 'pay_9'],
        ...['--result-json', '{"payment_id":"pay_9","amount_cents":500,"currency":"EUR"}', '--db', path],
      ]);
      expect(fits.code, fits.stderr).toBe(0);
      const replay = await expectValidAnswer(server.tool, 'pay-refuse', 'after the resolution');
      expect(replay).toMatchObject({
        status: 'succeeded',
        resource_id: 'pay_9',
        ...GOOD,
        payment_id: 'pay_9',
      });
    } finally {
      await ops.close();
      await server.store.close();
    }
  }, 90_000); // two CLI processes: seconds each on a loaded two-core machine

  it("the console's Result fields example is create_payment's own, and its form refuses other fields", async () => {
    const path = join(dir, 'console.sqlite');
    const server = paymentServer(path);
    const ops = opsStore(path);
    const handler = consoleApp({
      store: ops,
      prefix: '/console',
      policy: hostOriginPolicy({ bindHost: '127.0.0.1' }),
      credentials: {},
      devPrincipal: 'devop',
      secureCookies: false,
      retentionMs: HOUR,
      logger: silentLogger,
    });
    const http: Server = createServer((req, res) => void handler(req, res));
    try {
      const id = await operationIn(server, 'outcome_unknown', 'pay-console');
      await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
      const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}/console`;
      const first = await fetch(`${base}/operations/${id}`);
      const page = await first.text();
      const cookie = (first.headers.get('set-cookie') ?? '').split(';')[0] as string;
      const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] as string;
      expect(page).not.toContain('deployment_id');
      expect(page).toContain(
        'placeholder="{&quot;payment_id&quot;:&quot;&quot;,&quot;amount_cents&quot;:0,&quot;currency&quot;:&quot;&quot;}"',
      );
      expect(page).toContain(
        'Fields of create_payment v1: payment_id (string), amount_cents (integer), currency (string matching ^[A-Z]{3}$)',
      );
      const post = await fetch(`${base}/operations/${id}/resolve`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookie },
        body: new URLSearchParams({
          csrf,
          to: 'succeeded',
          resource_id: 'dep_1',
          result_json: '{"deployment_id":"dep_1"}',
        }).toString(),
      });
      expect(post.status).toBe(400);
      expect(await post.text()).toContain('create_payment results have no field &quot;deployment_id&quot;');
      expect((await ops.ledger.get(id))?.status).toBe('outcome_unknown');
      await expectValidAnswer(server.tool, 'pay-console', 'after the refused form');
    } finally {
      await new Promise<void>((resolve) => http.close(() => resolve()));
      await ops.close();
      await server.store.close();
    }
  });

  it('every action on every state leaves the key with a valid answer; refused fields write nothing', async () => {
    for (const state of STATES) {
      const path = join(dir, `every-${state.replaceAll(' ', '-')}.sqlite`);
      const server = paymentServer(path);
      const ops = opsStore(path);
      try {
        for (const [n, [action, act]] of ACTIONS.entries()) {
          const key = `pay-${n}`;
          const id = await operationIn(server, state, key);
          await expectValidAnswer(server.tool, key, `${state} before ${action}`);
          const before = await ops.ledger.get(id);
          let refused: OperatorActionError | undefined;
          try {
            await act(ops, id);
          } catch (error) {
            if (!(error instanceof OperatorActionError)) throw error;
            refused = error;
          }
          if (/undeclared|wrong type|pattern/.test(action)) {
            expect(refused, `${state}: ${action} is refused`).toBeDefined();
          }
          if (refused !== undefined) expect(await ops.ledger.get(id), `${state}: ${action}`).toEqual(before);
          await expectValidAnswer(server.tool, key, `${state}, then ${action}`);
        }
      } finally {
        await ops.close();
        await server.store.close();
      }
    }
  }, 120_000); // 80 operations on 8 databases, each retried twice
});
