import { IdemError } from './errors.js';
import type { Existing, Receipt } from './receipt.js';

export type Decision =
  | { readonly kind: 'execute' }
  | { readonly kind: 'replay'; readonly receipt: Receipt }
  | { readonly kind: 'reject'; readonly error: IdemError };

/**
 * What to do with a call, given what the store holds for its identity. Pure: the same decision is
 * taken on the lock-free read path and again inside the write transaction.
 */
export function decide(existing: Existing | undefined, requestFingerprint: string, now: number): Decision {
  if (existing === undefined) return { kind: 'execute' };
  if (existing.kind === 'tombstone') {
    if (existing.tombstone.expiresAt <= now) return { kind: 'execute' };
    return {
      kind: 'reject',
      error: expired(existing.tombstone.receiptExpiredAt, existing.tombstone.expiresAt),
    };
  }
  const { receipt } = existing;
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
