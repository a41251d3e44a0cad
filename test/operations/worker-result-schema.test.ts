import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { JsonObject } from '../../packages/idem/src/core/json.js';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import { outcomeOf } from '../../packages/idem/src/executor/call-outcome.js';
import { exactOutputSchema } from '../../packages/idem/src/mcp/result-schema.js';
import { outcomeResult } from '../../packages/idem/src/mcp/tool-result.js';
import {
  clientReferenceHandler,
  idempotencyKeyHandler,
  unkeyedHandler,
} from '../../packages/idem/src/operations/public.js';
import {
  Worker,
  type DispatchOutcome,
  type DurableHandler,
  type ReconcileOutcome,
  type RecoveryMode,
} from '../../packages/idem/src/operations/index.js';
import { requestCancel } from '../../packages/idem/src/operations/ledger-transitions.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import {
  accept,
  LEASE_MS,
  memoryLogger,
  OPERATION,
  openStore,
  tempDir,
  TEST_POLICY,
} from './operations-fixtures.js';

/** What the durable tool and its handler declare beside resource_id. */
const DEPLOY_RESULT = z.object({ url: z.string(), replicas: z.number().int() });

/** A worker whose handler declares DEPLOY_RESULT and answers with `fields`, after `first` (if any). */
async function setup(
  mode: RecoveryMode,
  fields: JsonObject,
  first?: DispatchOutcome | ((op: OperationRecord) => Promise<DispatchOutcome>),
) {
  const clock = new FakeClock();
  const store = openStore(join(tempDir(), 'idem.sqlite'), clock);
  const logger = memoryLogger();
  const created = { kind: 'created', resourceId: 'dep_1', fields } as const;
  const handler: DurableHandler = {
    mode,
    resultSchema: DEPLOY_RESULT,
    dispatch: async (op) => (typeof first === 'function' ? first(op) : (first ?? created)),
    reconcile: async (): Promise<ReconcileOutcome> => created,
    nextAction: (op) => `look for ${op.operationId}`,
  };
  const worker = new Worker({
    store,
    handlers: { [OPERATION]: handler },
    clock,
    logger,
    policy: TEST_POLICY,
    leaseMs: LEASE_MS,
    random: () => 0,
  });
  const op = await accept(store, clock, { service: 'billing', version: '3.1.0' });
  const get = async () => (await store.ledger.get(op.operationId)) as OperationRecord;
  return { logger, worker, op, get, store, clock };
}

/** The answer a replay of `record` gives, checked against the durable tool's exact output schema. */
function fitsExactSchema(record: OperationRecord): boolean {
  const answer = outcomeResult(outcomeOf(record, true, 'att_1'));
  return exactOutputSchema(DEPLOY_RESULT).safeParse(answer.structuredContent).success;
}

describe('a durable handler with a declared resultSchema', () => {
  it('records a success whose fields fit as it is, and logs nothing about it', async () => {
    const t = await setup('key', { url: 'https://billing.example', replicas: 3 });
    while (await t.worker.runOnce());
    const record = await t.get();
    expect(record).toMatchObject({ status: 'succeeded', resourceId: 'dep_1' });
    expect(record.result).toEqual({
      status: 'succeeded',
      operation_id: t.op.operationId,
      resource_id: 'dep_1',
      url: 'https://billing.example',
      replicas: 3,
    });
    expect(t.logger.events('op.result_mismatch')).toEqual([]);
    expect(fitsExactSchema(record)).toBe(true);
  });

  it.each([
    ['dispatch', 'key' as const, undefined],
    [
      'reconcile (after an ambiguous attempt)',
      'reference' as const,
      { kind: 'ambiguous', reason: 'timeout' } as const,
    ],
  ])(
    'records a %s success whose fields do not fit as succeeded, without them, and logs which',
    async (_, mode, first) => {
      const fields = { url: 'https://billing.example', replicas: 'three', secret: 'hunter2' };
      const t = await setup(mode, fields, first);
      for (let turn = 0; turn < 5 && (await t.worker.runOnce()); turn++);
      const record = await t.get();
      // The effect happened at the provider: a success with its resource, never `failed`.
      expect(record).toMatchObject({ status: 'succeeded', resourceId: 'dep_1' });
      expect(record.result).toEqual({
        status: 'succeeded',
        operation_id: t.op.operationId,
        resource_id: 'dep_1',
        url: 'https://billing.example',
      });
      expect(fitsExactSchema(record)).toBe(true);
      const logged = t.logger.lines.filter((line) => line.event === 'op.result_mismatch');
      expect(logged).toHaveLength(1);
      expect(logged[0]?.level).toBe('error');
      expect(logged[0]?.fields).toMatchObject({ operation_id: t.op.operationId });
      expect(String(logged[0]?.fields.problems)).toMatch(/replicas: .*; secret: not declared/);
      expect(JSON.stringify(t.logger.lines)).not.toMatch(/hunter2|three/);
    },
  );

  it('stores cancellation evidence with Idem names and fitting declared fields only, and logs the rest', async () => {
    const t = await setup('key', {}, async (op) => {
      await requestCancel(t.store.ledger, op.operationId, t.clock.now());
      return {
        kind: 'cancelled',
        evidence: {
          status: 'cancelled',
          operation_id: op.operationId,
          next_action: 'Check before running it again.',
          url: 'https://billing.example',
          replicas: 'three',
          exit_code: 143,
        },
      };
    });
    for (let turn = 0; turn < 5 && (await t.worker.runOnce()); turn++);
    const record = await t.get();
    expect(record.status).toBe('cancelled');
    expect(record.result).toEqual({
      status: 'cancelled',
      operation_id: t.op.operationId,
      next_action: 'Check before running it again.',
      url: 'https://billing.example',
    });
    expect(fitsExactSchema(record)).toBe(true);
    const logged = t.logger.events('op.result_mismatch');
    expect(logged).toHaveLength(1);
    expect(String(logged[0]?.problems)).toBe(
      'replicas: does not fit its declaration; exit_code: not declared',
    );
  });

  it('is an option of every ready HTTP handler, which the worker reads', () => {
    const common = {
      url: 'https://payments.example/payments',
      body: (args: JsonObject) => args,
      result: () => undefined,
      resultSchema: DEPLOY_RESULT,
    };
    expect(idempotencyKeyHandler(common).resultSchema).toBe(DEPLOY_RESULT);
    expect(unkeyedHandler(common).resultSchema).toBe(DEPLOY_RESULT);
    const reference = { ...common, searchUrl: () => common.url, matches: () => [] };
    expect(clientReferenceHandler(reference).resultSchema).toBe(DEPLOY_RESULT);
  });
});
