import { describe, expect, it } from 'vitest';
import { decide, type Decision } from '../../packages/idem/src/core/decide.js';
import type { IdemError } from '../../packages/idem/src/core/errors.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import type { OperationIdentity } from '../../packages/idem/src/core/operation-identity.js';
import type { Existing, Receipt, Tombstone } from '../../packages/idem/src/core/receipt.js';

const NOW = Date.UTC(2026, 0, 2);
const FP = 'a'.repeat(64);
const OTHER_FP = 'b'.repeat(64);

/** A call at version 1, the version the stored records below have unless a test says otherwise. */
const V1 = { version: 1 };

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

function errorOf(decision: Decision): IdemError {
  if (decision.kind !== 'reject') throw new Error(`expected a rejection, got ${decision.kind}`);
  return decision.error;
}

describe('decide', () => {
  it('executes when nothing is stored for the identity', () => {
    expect(decide(undefined, FP, NOW, V1)).toEqual({ kind: 'execute' });
  });

  it('replays a live receipt with the same fingerprint, handing back that receipt', () => {
    const existing = receipt();
    const decision = decide(existing, FP, NOW, V1);
    expect(decision.kind).toBe('replay');
    if (decision.kind === 'replay' && existing.kind === 'receipt')
      expect(decision.receipt).toBe(existing.receipt);
  });

  it('rejects a live receipt with another fingerprint as payload_conflict', () => {
    const error = errorOf(decide(receipt(), OTHER_FP, NOW, V1));
    expect(error.code).toBe('payload_conflict');
    expect(error.retryable).toBe(false);
  });

  it('rejects an expired receipt as key_expired, whatever the fingerprint', () => {
    const existing = receipt({ expiresAt: NOW - 1 });
    expect(errorOf(decide(existing, FP, NOW, V1)).code).toBe('key_expired');
    expect(errorOf(decide(existing, OTHER_FP, NOW, V1)).code).toBe('key_expired');
  });

  it('treats a receipt as expired from the instant expiresAt on', () => {
    expect(decide(receipt({ expiresAt: NOW + 1 }), FP, NOW, V1).kind).toBe('replay');
    expect(errorOf(decide(receipt({ expiresAt: NOW }), FP, NOW, V1)).code).toBe('key_expired');
  });

  it('names the expiry instant of the receipt in key_expired', () => {
    const expiresAt = Date.UTC(2026, 0, 1, 12, 30);
    const error = errorOf(decide(receipt({ expiresAt }), FP, NOW, V1));
    expect(error.message).toContain('2026-01-01T12:30:00.000Z');
  });

  it('rejects a live tombstone as key_expired, naming when the receipt expired', () => {
    const receiptExpiredAt = Date.UTC(2026, 0, 1, 6);
    const existing = tombstone({ receiptExpiredAt });
    const error = errorOf(decide(existing, FP, NOW, V1));
    expect(error.code).toBe('key_expired');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('2026-01-01T06:00:00.000Z');
    expect(errorOf(decide(existing, OTHER_FP, NOW, V1)).code).toBe('key_expired');
  });

  it('says until when an expired key stays refused and that it is free again after that', () => {
    const expiresAt = Date.UTC(2026, 1, 1, 6);
    const error = errorOf(decide(tombstone({ expiresAt }), FP, NOW, V1));
    expect(error.message).toMatch(
      /refused and not executed until 2026-02-01T06:00:00.000Z; after that the key is free again/,
    );
    expect(error.message).not.toMatch(/will not run again/);
    const unswept = errorOf(decide(receipt({ expiresAt: NOW }), FP, NOW, V1));
    expect(unswept.message).toMatch(
      /for the server's tombstone retention after that; after that the key is free again/,
    );
  });

  it('executes once the tombstone itself has expired (the key is free again)', () => {
    expect(decide(tombstone({ expiresAt: NOW }), FP, NOW, V1)).toEqual({ kind: 'execute' });
    expect(decide(tombstone({ expiresAt: NOW - 1 }), OTHER_FP, NOW, V1)).toEqual({ kind: 'execute' });
    expect(decide(tombstone({ expiresAt: NOW + 1 }), FP, NOW, V1).kind).toBe('reject');
  });

  it('is pure: the same inputs give the same decision and the input is not changed', () => {
    const existing = receipt();
    const snapshot = structuredClone(existing);
    expect(decide(existing, FP, NOW, V1)).toEqual(decide(existing, FP, NOW, V1));
    expect(errorOf(decide(existing, OTHER_FP, NOW, V1)).code).toBe(
      errorOf(decide(existing, OTHER_FP, NOW, V1)).code,
    );
    expect(existing).toEqual(snapshot);
  });
});

describe('decide across versions of the operation', () => {
  const V2 = { version: 2 };
  const V2_REPLAYS_V1 = { version: 2, replaysVersions: [1] };

  it('never executes a key that a live record or tombstone of another version holds', () => {
    for (const existing of [
      receipt(),
      receipt({ status: 'accepted', expiresAt: undefined }),
      receipt({ expiresAt: NOW - 1 }),
      tombstone(),
    ]) {
      for (const call of [V2, V2_REPLAYS_V1, { version: 3, replaysVersions: [2] }]) {
        for (const fp of [FP, OTHER_FP]) expect(decide(existing, fp, NOW, call).kind).not.toBe('execute');
      }
    }
  });

  it('refuses an unlisted version as version_conflict, naming the version and operation that hold the key', () => {
    const error = errorOf(decide(receipt(), FP, NOW, V2));
    expect(error.code).toBe('version_conflict');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('create_note@v1');
    expect(error.message).toContain('op_1');
    expect(error.operationId).toBe('op_1');
    expect(error.nextStep).toBe('inspect_operation');
    // Other arguments, an expired record: the same refusal, never a payload_conflict of v2's making.
    expect(errorOf(decide(receipt(), OTHER_FP, NOW, V2)).code).toBe('version_conflict');
    expect(errorOf(decide(receipt({ expiresAt: NOW }), FP, NOW, V2)).code).toBe('version_conflict');
    // A version that lists others, but not this one.
    expect(errorOf(decide(receipt(), FP, NOW, { version: 3, replaysVersions: [2] })).code).toBe(
      'version_conflict',
    );
  });

  it('refuses a live tombstone of an unlisted version, saying its operation_id is no longer kept', () => {
    const error = errorOf(decide(tombstone(), FP, NOW, V2));
    expect(error.code).toBe('version_conflict');
    expect(error.message).toContain('create_note@v1');
    expect(error.message).toContain('operation_id is no longer kept');
    expect(error.operationId).toBeUndefined();
    expect(error.nextAction).toMatch(/generate a new idempotency_key/);
  });

  it('answers a listed version from its record exactly as that version would', () => {
    const existing = receipt();
    const replay = decide(existing, FP, NOW, V2_REPLAYS_V1);
    expect(replay.kind).toBe('replay');
    if (replay.kind === 'replay' && existing.kind === 'receipt')
      expect(replay.receipt).toBe(existing.receipt);
    const running = receipt({ status: 'running', expiresAt: undefined });
    expect(decide(running, FP, NOW, V2_REPLAYS_V1)).toEqual(decide(running, FP, NOW, V1));
    expect(errorOf(decide(existing, OTHER_FP, NOW, V2_REPLAYS_V1)).code).toBe('payload_conflict');
    expect(errorOf(decide(receipt({ expiresAt: NOW }), FP, NOW, V2_REPLAYS_V1)).code).toBe('key_expired');
    expect(errorOf(decide(tombstone(), FP, NOW, V2_REPLAYS_V1)).code).toBe('key_expired');
  });

  it('treats an expired tombstone of any version as no record: the key is free again', () => {
    expect(decide(tombstone({ expiresAt: NOW }), FP, NOW, V2)).toEqual({ kind: 'execute' });
    expect(decide(tombstone({ expiresAt: NOW }), OTHER_FP, NOW, V2_REPLAYS_V1)).toEqual({ kind: 'execute' });
  });
});

describe('Executor.validate: replaysVersions', () => {
  it('accepts older versions only', () => {
    expect(() =>
      Executor.validate({ name: 'create_note', version: 3, replaysVersions: [1, 2] }),
    ).not.toThrow();
    for (const older of [3, 4, 0, 1.5, Number.NaN]) {
      expect(() => Executor.validate({ name: 'create_note', version: 3, replaysVersions: [older] })).toThrow(
        /replaysVersions lists older versions/,
      );
    }
  });
});
