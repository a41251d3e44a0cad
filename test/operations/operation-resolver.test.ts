import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../packages/idem/src/core/json.js';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import { resolveOperation } from '../../packages/idem/src/operations/index.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { harness, OPERATION, type Harness } from './operations-fixtures.js';

const DAY = 24 * 60 * 60 * 1000;
const args = { service: 'billing', version: '1.4.2' };

/** A deployment the worker carried to success, for the shape of its result. */
async function automaticSuccess(h: Harness): Promise<OperationRecord> {
  const op = await h.accept(args);
  expect(await h.worker().runOnce()).toBe(true);
  const done = await h.get(op.operationId);
  expect(done.status).toBe('succeeded');
  return done;
}

describe('resolveOperation: an operator-established success has the shape of an automatic one', () => {
  it('resolving outcome_unknown with a resource id gives deployment_id, service and version beside resource_id', async () => {
    const h = await harness('none', new FakeClock());
    const automatic = await automaticSuccess(h);
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'drop_response', route: 'create' });
    expect(await h.worker().runOnce()).toBe(true);
    expect((await h.get(op.operationId)).status).toBe('outcome_unknown');

    const now = h.clock.now();
    const resolved = await resolveOperation(h.store.ledger, { [OPERATION]: h.handler }, op.operationId, {
      to: 'succeeded',
      by: 'oncall',
      now,
      resourceId: 'dep_found',
      expiresAt: now + DAY,
    });
    expect(resolved?.result).toEqual({
      status: 'succeeded',
      operation_id: op.operationId,
      resource_id: 'dep_found',
      deployment_id: 'dep_found',
      service: 'billing',
      version: '1.4.2',
    });
    expect(Object.keys(resolved?.result ?? {})).toEqual(Object.keys(automatic.result ?? {}));
    // The handler's hook gives the fields its own dispatch recorded.
    expect(h.handler.successFields?.(automatic, automatic.resourceId ?? '')).toEqual({
      deployment_id: automatic.resourceId,
      service: 'billing',
      version: '1.4.2',
    });
  });

  it('a corrected failure has the same shape, and the worker leaves it alone', async () => {
    const h = await harness('key', new FakeClock());
    const automatic = await automaticSuccess(h);
    const op = await h.accept({ service: 'invalid-thing', version: '1' });
    expect(await h.worker().runOnce()).toBe(true);
    expect((await h.get(op.operationId)).status).toBe('failed');

    const now = h.clock.now();
    const corrected = await resolveOperation(h.store.ledger, { [OPERATION]: h.handler }, op.operationId, {
      to: 'succeeded',
      correct: true,
      by: 'oncall',
      now,
      resourceId: 'dep_manual',
      reason: 'deployed by hand after the refusal',
      expiresAt: now + DAY,
    });
    expect(corrected).toMatchObject({
      status: 'succeeded',
      result: {
        resource_id: 'dep_manual',
        deployment_id: 'dep_manual',
        service: 'invalid-thing',
        version: '1',
      },
    });
    expect(Object.keys(corrected?.result ?? {})).toEqual(Object.keys(automatic.result ?? {}));
    expect(await h.worker().runOnce()).toBe(false);
    expect(await h.get(op.operationId)).toEqual(corrected);
  });

  it('without a successFields hook the success carries status and ids only; an unknown id is undefined', async () => {
    const h = await harness('none', new FakeClock());
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'drop_response', route: 'create' });
    await h.worker().runOnce();
    const now = h.clock.now();
    const request = {
      to: 'succeeded',
      by: 'oncall',
      now,
      resourceId: 'dep_x',
      expiresAt: now + DAY,
    } as const;
    const resolved = await resolveOperation(h.store.ledger, {}, op.operationId, request);
    expect(resolved?.result).toEqual({
      status: 'succeeded',
      operation_id: op.operationId,
      resource_id: 'dep_x',
    });
    expect(await resolveOperation(h.store.ledger, {}, 'op_unknown', request)).toBeUndefined();
  });
});

describe('resolveOperation: result fields the operator gives', () => {
  it('carry a success of a tool without a successFields hook; ill-fitting ones are refused and nothing is written', async () => {
    const h = await harness('none', new FakeClock());
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'drop_response', route: 'create' });
    await h.worker().runOnce();
    const unknown = await h.get(op.operationId);
    expect(unknown.status).toBe('outcome_unknown');
    const now = h.clock.now();
    const base = { to: 'succeeded', by: 'oncall', now, resourceId: 'dep_x', expiresAt: now + DAY } as const;

    const reserved: JsonObject[] = [{ status: 'failed' }, { next_action: 'x' }, { resource_id: 'other' }];
    for (const fields of reserved) {
      await expect(
        resolveOperation(h.store.ledger, {}, op.operationId, { ...base, fields }),
      ).rejects.toMatchObject({
        code: 'invalid_argument',
        message: expect.stringContaining('is set by Idem itself'),
      });
    }
    // With the handler's hook: only its names, with its JSON types.
    const handlers = { [OPERATION]: h.handler };
    await expect(
      resolveOperation(h.store.ledger, handlers, op.operationId, { ...base, fields: { region: 'eu' } }),
    ).rejects.toMatchObject({
      code: 'invalid_argument',
      message: expect.stringContaining('no field "region"'),
    });
    await expect(
      resolveOperation(h.store.ledger, handlers, op.operationId, { ...base, fields: { version: 2 } }),
    ).rejects.toMatchObject({
      code: 'invalid_argument',
      message: expect.stringContaining('is a string, got a number'),
    });
    await expect(
      resolveOperation(h.store.ledger, {}, op.operationId, {
        to: 'failed',
        by: 'oncall',
        now,
        reason: 'absent',
        expiresAt: now + DAY,
        fields: { a: 1 },
      }),
    ).rejects.toMatchObject({ code: 'invalid_argument' });
    expect(await h.get(op.operationId)).toEqual(unknown);

    const resolved = await resolveOperation(h.store.ledger, {}, op.operationId, {
      ...base,
      fields: { deployment_id: 'dep_x', url: 'https://dep_x.example', replicas: 3 },
    });
    expect(resolved?.result).toEqual({
      status: 'succeeded',
      operation_id: op.operationId,
      resource_id: 'dep_x',
      deployment_id: 'dep_x',
      url: 'https://dep_x.example',
      replicas: 3,
    });
  });
});

describe("resolveOperation(store, ...): the tool's stored declaration decides", () => {
  it('refuses undeclared and ill-fitting fields, or any field when none is stored; writes nothing', async () => {
    const h = await harness('none', new FakeClock());
    const op = await h.accept(args);
    h.provider.faults.arm({ kind: 'drop_response', route: 'create' });
    await h.worker().runOnce();
    const unknown = await h.get(op.operationId);
    expect(unknown.status).toBe('outcome_unknown');
    const now = h.clock.now();
    const base = { to: 'succeeded', by: 'oncall', now, resourceId: 'dep_x', expiresAt: now + DAY } as const;
    const refused = (fields: JsonObject, message: string) =>
      expect(resolveOperation(h.store, {}, op.operationId, { ...base, fields })).rejects.toMatchObject({
        code: 'invalid_argument',
        message: expect.stringContaining(message),
      });

    // Nothing stored for this tool version: result fields are refused, whatever they are.
    await refused({ deployment_id: 'dep_x' }, 'are not known to this database');
    await h.store.tools.declare({
      operation: OPERATION,
      version: 1,
      resultSchema: {
        type: 'object',
        properties: {
          deployment_id: { type: 'string' },
          replicas: { type: 'integer', minimum: 1 },
          region: { type: 'string', enum: ['eu', 'us'] },
          url: { anyOf: [{ type: 'string', pattern: '^https://' }, { type: 'null' }] },
        },
        required: ['deployment_id'],
      },
      declaredAt: now,
    });
    await refused(
      { payment_id: 'p' },
      `${OPERATION} results have no field "payment_id"; its fields are deployment_id, replicas, region, url`,
    );
    await refused({ replicas: '3' }, 'result field "replicas" of');
    await refused({ replicas: 2.5 }, 'expected integer, got number');
    await refused({ replicas: 0 }, 'expected at least 1');
    await refused({ region: 'asia' }, 'expected one of "eu", "us"');
    await refused({ url: 'http://x' }, 'fits none of its 2 allowed forms');
    expect(await h.get(op.operationId)).toEqual(unknown);

    const resolved = await resolveOperation(h.store, {}, op.operationId, {
      ...base,
      fields: { deployment_id: 'dep_x', replicas: 3, region: 'eu', url: null },
    });
    expect(resolved?.result).toEqual({
      status: 'succeeded',
      operation_id: op.operationId,
      resource_id: 'dep_x',
      deployment_id: 'dep_x',
      replicas: 3,
      region: 'eu',
      url: null,
    });
  });
});
