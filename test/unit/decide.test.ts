import { describe, expect, it } from 'vitest';
import { decide, type Decision } from '../../src/core/decide.js';
import type { OperationIdentity } from '../../src/core/operation-identity.js';
import type { Existing, Receipt, Tombstone } from '../../src/core/receipt.js';

const NOW = Date.UTC(2026, 0, 2);
const FP = 'a'.repeat(64);
const OTHER_FP = 'b'.repeat(64);

const identity: OperationIdentity = {
  principal: 'alice',
  workspace: 'ws-1',
  operation: 'create_note',
  version: 1,
  key: 'key-1',
};

function receipt(overrides: Partial<Receipt> = {}): Existing {
  const value: Receipt = {
    operationId: 'op_1',
    identity,
    fingerprint: FP,
    kind: 'local',
    status: 'succeeded',
    resourceId: 'note_1',
    updatedAt: NOW - 1000,
    attemptCount: 1,
    dispatched: false,
    result: { status: 'succeeded', operation_id: 'op_1', resource_id: 'note_1', note_id: 'note_1' },
    createdAt: NOW - 1000,
    expiresAt: NOW + 1000,
    ...overrides,
  };
  return { kind: 'receipt', receipt: value };
}

function tombstone(overrides: Partial<Tombstone> = {}): Existing {
  const value: Tombstone = {
    identity,
    fingerprint: FP,
    receiptExpiredAt: NOW - 1000,
    expiresAt: NOW + 1000,
    ...overrides,
  };
  return { kind: 'tombstone', tombstone: value };
}

function errorOf(decision: Decision): { code: string; retryable: boolean; message: string } {
  if (decision.kind !== 'reject') throw new Error(`expected a rejection, got ${decision.kind}`);
  return decision.error;
}

describe('decide', () => {
  it('executes when nothing is stored for the identity', () => {
    expect(decide(undefined, FP, NOW)).toEqual({ kind: 'execute' });
  });

  it('replays a live receipt with the same fingerprint, handing back that receipt', () => {
    const existing = receipt();
    const decision = decide(existing, FP, NOW);
    expect(decision.kind).toBe('replay');
    if (decision.kind === 'replay' && existing.kind === 'receipt')
      expect(decision.receipt).toBe(existing.receipt);
  });

  it('rejects a live receipt with another fingerprint as payload_conflict', () => {
    const error = errorOf(decide(receipt(), OTHER_FP, NOW));
    expect(error.code).toBe('payload_conflict');
    expect(error.retryable).toBe(false);
  });

  it('rejects an expired receipt as key_expired, whatever the fingerprint', () => {
    const existing = receipt({ expiresAt: NOW - 1 });
    expect(errorOf(decide(existing, FP, NOW)).code).toBe('key_expired');
    expect(errorOf(decide(existing, OTHER_FP, NOW)).code).toBe('key_expired');
  });

  it('treats a receipt as expired from the instant expiresAt on', () => {
    expect(decide(receipt({ expiresAt: NOW + 1 }), FP, NOW).kind).toBe('replay');
    expect(errorOf(decide(receipt({ expiresAt: NOW }), FP, NOW)).code).toBe('key_expired');
  });

  it('names the expiry instant of the receipt in key_expired', () => {
    const expiresAt = Date.UTC(2026, 0, 1, 12, 30);
    const error = errorOf(decide(receipt({ expiresAt }), FP, NOW));
    expect(error.message).toContain('2026-01-01T12:30:00.000Z');
  });

  it('rejects a live tombstone as key_expired, naming when the receipt expired', () => {
    const receiptExpiredAt = Date.UTC(2026, 0, 1, 6);
    const existing = tombstone({ receiptExpiredAt });
    const error = errorOf(decide(existing, FP, NOW));
    expect(error.code).toBe('key_expired');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('2026-01-01T06:00:00.000Z');
    expect(errorOf(decide(existing, OTHER_FP, NOW)).code).toBe('key_expired');
  });

  it('says until when an expired key stays refused and that it is free again after that', () => {
    const expiresAt = Date.UTC(2026, 1, 1, 6);
    const error = errorOf(decide(tombstone({ expiresAt }), FP, NOW));
    expect(error.message).toMatch(
      /refused and not executed until 2026-02-01T06:00:00.000Z; after that the key is free again/,
    );
    expect(error.message).not.toMatch(/will not run again/);
    const unswept = errorOf(decide(receipt({ expiresAt: NOW }), FP, NOW));
    expect(unswept.message).toMatch(
      /for the server's tombstone retention after that; after that the key is free again/,
    );
  });

  it('executes once the tombstone itself has expired (the key is free again)', () => {
    expect(decide(tombstone({ expiresAt: NOW }), FP, NOW)).toEqual({ kind: 'execute' });
    expect(decide(tombstone({ expiresAt: NOW - 1 }), OTHER_FP, NOW)).toEqual({ kind: 'execute' });
    expect(decide(tombstone({ expiresAt: NOW + 1 }), FP, NOW).kind).toBe('reject');
  });

  it('is pure: the same inputs give the same decision and the input is not changed', () => {
    const existing = receipt();
    const snapshot = structuredClone(existing);
    expect(decide(existing, FP, NOW)).toEqual(decide(existing, FP, NOW));
    expect(errorOf(decide(existing, OTHER_FP, NOW)).code).toBe(errorOf(decide(existing, OTHER_FP, NOW)).code);
    expect(existing).toEqual(snapshot);
  });
});
