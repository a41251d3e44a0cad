import { IdemError } from './errors.js';
import { operationLabel, type OperationIdentity } from './operation-identity.js';
import type { Existing, ReceiptView } from './receipt.js';

export type Decision =
  | { readonly kind: 'execute' }
  | { readonly kind: 'replay'; readonly receipt: ReceiptView }
  | { readonly kind: 'reject'; readonly error: IdemError };

/**
 * The version a call runs under, and the older versions of the same operation whose keys it still
 * answers (`replaysVersions`): their records replay under their own contract, never run again.
 */
export interface CallVersion {
  readonly version: number;
  readonly replaysVersions?: readonly number[];
}

/**
 * What to do with a call, given what the store holds for its key in any version of its operation.
 * Pure: the same decision is taken on the lock-free read path and again inside the write
 * transaction. A record or a live tombstone of another version never leads to `execute`: a version
 * listed in `call.replaysVersions` is answered from it exactly as a same-version call would be; any
 * other version is refused with `version_conflict`. An expired tombstone is no record at all, in
 * any version: the key is free again.
 */
export function decide(
  existing: Existing | undefined,
  requestFingerprint: string,
  now: number,
  call: CallVersion,
): Decision {
  if (existing === undefined) return { kind: 'execute' };
  if (existing.kind === 'tombstone') {
    if (existing.tombstone.expiresAt <= now) return { kind: 'execute' };
    if (!answers(call, existing.tombstone.identity))
      return { kind: 'reject', error: versionConflict(existing, call) };
    return {
      kind: 'reject',
      error: expired(existing.tombstone.receiptExpiredAt, existing.tombstone.expiresAt),
    };
  }
  const { receipt } = existing;
  if (!answers(call, receipt.identity)) return { kind: 'reject', error: versionConflict(existing, call) };
  if (receipt.expiresAt !== undefined && receipt.expiresAt <= now) {
    return { kind: 'reject', error: expired(receipt.expiresAt) };
  }
  if (receipt.fingerprint !== requestFingerprint) {
    return {
      kind: 'reject',
      error: new IdemError(
        'payload_conflict',
        'this idempotency_key was already used with different arguments; nothing was changed',
        {
          nextAction:
            'To repeat the original action, resend its original arguments with this key. For a new action, generate a new idempotency_key.',
        },
      ),
    };
  }
  // Any state: a succeeded record replays its result; an unfinished or failed one reports its state.
  return { kind: 'replay', receipt };
}

/** Whether a call at `call.version` answers a key held by `held`'s version. */
function answers(call: CallVersion, held: Pick<OperationIdentity, 'version'>): boolean {
  return held.version === call.version || (call.replaysVersions ?? []).includes(held.version);
}

/**
 * `version_conflict`: the key belongs to another version of the operation, which this one does not
 * answer for. Names that version and its operation (a tombstone keeps no operation id: it says so).
 */
function versionConflict(existing: Existing, call: CallVersion): IdemError {
  const held = existing.kind === 'receipt' ? existing.receipt.identity : existing.tombstone.identity;
  const label = operationLabel(held);
  const current = operationLabel({ operation: held.operation, version: call.version });
  const refused = `this idempotency_key belongs to ${label}, which ${current} does not answer for; the call was not executed`;
  if (existing.kind === 'tombstone') {
    return new IdemError(
      'version_conflict',
      `${refused}. The ${label} result has expired and its operation_id is no longer kept`,
      {
        nextAction:
          'Check with a read tool whether the original action took effect. For a new action, generate a new idempotency_key.',
      },
    );
  }
  const { operationId } = existing.receipt;
  return new IdemError('version_conflict', `${refused}. The action is operation ${operationId}`, {
    operationId,
    nextStep: 'inspect_operation',
  });
}

/**
 * `key_expired`, saying how long the key stays refused: until the tombstone's expiry when it is
 * known (`freeAt`), else for the server's tombstone window; after that the key is free again.
 */
function expired(at: number, freeAt?: number): IdemError {
  const until =
    freeAt === undefined
      ? "for the server's tombstone retention after that"
      : `until ${new Date(freeAt).toISOString()}`;
  return new IdemError(
    'key_expired',
    `this idempotency_key expired at ${new Date(at).toISOString()}; its result is no longer kept. A retry with it is refused and not executed ${until}; after that the key is free again and a call with it would be a new action`,
    {
      nextAction:
        'Check with a read tool whether the original action took effect; if a new action is wanted, generate a new idempotency_key.',
    },
  );
}
