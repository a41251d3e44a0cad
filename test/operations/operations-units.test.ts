import { describe, expect, it } from 'vitest';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import { DEFAULT_RETRY_POLICY } from '../../packages/idem/src/core/retry-policy.js';
import {
  LeaseKeeper,
  operationBudget,
  providerKeyFor,
  stopMessage,
  successResult,
} from '../../packages/idem/src/operations/index.js';
import { describe as describeOutcome } from '../../packages/idem/src/operations/operation-processor.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { memoryLogger } from './operations-fixtures.js';

const record = (overrides: Partial<OperationRecord> = {}): OperationRecord => ({
  operationId: 'op_1',
  identity: { principal: 'p', workspace: 'w', operation: 'deploy', version: 1, key: 'k' },
  fingerprint: 'f',
  kind: 'durable',
  status: 'accepted',
  args: { service: 'billing', version: '1.0' },
  createdAt: 1_000,
  updatedAt: 1_000,
  attemptCount: 0,
  dispatched: false,
  ...overrides,
});

describe('operationBudget', () => {
  it('counts from createdAt on the wall clock; the earlier of deadline and policy total wins', () => {
    const policy = { ...DEFAULT_RETRY_POLICY, totalMs: 30_000 };
    expect(operationBudget(policy, record(), 6_000)).toMatchObject({ elapsedMs: 5_000, remainingMs: 25_000 });
    const early = operationBudget(policy, record({ deadlineAt: 11_000 }), 6_000);
    expect(early).toMatchObject({ elapsedMs: 5_000, remainingMs: 5_000, policy: { totalMs: 10_000 } });
    const late = operationBudget(policy, record({ deadlineAt: 100_000 }), 6_000);
    expect(late.policy.totalMs).toBe(30_000);
    expect(operationBudget(policy, record(), 0).elapsedMs).toBe(0); // a clock behind createdAt
  });
});

describe('stopMessage and successResult', () => {
  it('names the reason, the attempts and the last reason', () => {
    expect(stopMessage('deadline_exhausted', 2, 'throttled (HTTP 503)')).toBe(
      'deadline exhausted after 2 attempts: throttled (HTTP 503)',
    );
    expect(stopMessage('attempts_exhausted', 1, 'x')).toBe('attempts exhausted after 1 attempt: x');
    expect(stopMessage('retry_after_beyond_deadline', 1, 'x')).toMatch(/^retry_after_beyond_deadline/);
  });

  it('the stored result: status, ids, then business fields; reserved names cannot be overridden', () => {
    const result = successResult(record(), {
      kind: 'created',
      resourceId: 'dep_1',
      fields: { deployment_id: 'dep_1', status: 'deployed', operation_id: 'x', replayed: true },
    });
    expect(result).toEqual({
      status: 'succeeded',
      operation_id: 'op_1',
      resource_id: 'dep_1',
      deployment_id: 'dep_1',
    });
    expect(Object.keys(result)).toEqual(['status', 'operation_id', 'resource_id', 'deployment_id']);
  });

  it('outcome descriptions are short and body-free', () => {
    expect(describeOutcome({ kind: 'throttled', status: 0 })).toBe('connection refused');
    expect(describeOutcome({ kind: 'throttled', status: 429, retryAfterMs: 1000 })).toBe(
      'throttled (HTTP 429), retry after 1000 ms',
    );
    expect(describeOutcome({ kind: 'rejected', code: 'forbidden', status: 403, reason: 'forbidden' })).toBe(
      'rejected with HTTP 403 (forbidden)',
    );
    expect(describeOutcome({ kind: 'ambiguous', reason: 'timeout' })).toBe('ambiguous: timeout');
  });
});

describe('providerKeyFor', () => {
  it('the provider key is derived from the operation id', () => {
    expect(providerKeyFor('op_abc')).toBe('idem-op_abc');
  });
});

describe('LeaseKeeper', () => {
  const keeper = (renew: () => Promise<boolean>) => {
    const clock = new FakeClock();
    const logger = memoryLogger();
    const calls: number[] = [];
    const lease = new LeaseKeeper({
      ledger: {
        renew: async (_id, { leaseExpiresAt: until }) => {
          calls.push(until - clock.now());
          return renew();
        },
      },
      clock,
      logger,
      operationId: 'op_1',
      workerId: 'w',
      leaseMs: 3_000,
    });
    return { clock, logger, calls, lease };
  };
  const settle = () => new Promise((resolve) => setTimeout(resolve, 5));

  it('renews every leaseMs / 3 for a full lease, and aborts when the lease is lost', async () => {
    let answer = true;
    const t = keeper(async () => answer);
    t.lease.start();
    t.clock.advance(999);
    await settle();
    expect(t.calls).toEqual([]);
    t.clock.advance(1);
    await settle();
    expect(t.calls).toEqual([3_000]);
    answer = false;
    t.clock.advance(1_000);
    await settle();
    expect(t.lease.signal.aborted).toBe(true);
    expect(t.logger.events('op.lease_lost')).toHaveLength(1);
    await t.lease.stop();
  });

  it('a renewal that throws is logged and retried; stop ends it', async () => {
    const t = keeper(async () => {
      throw new Error('busy');
    });
    t.lease.start();
    t.clock.advance(1_000);
    await settle();
    t.clock.advance(1_000);
    await settle();
    expect(t.calls).toHaveLength(2);
    expect(t.lease.signal.aborted).toBe(false);
    expect(t.logger.events('op.lease_renew_failed')).toHaveLength(2);
    await t.lease.stop();
    t.clock.advance(5_000);
    await settle();
    expect(t.calls).toHaveLength(2);
  });
});
