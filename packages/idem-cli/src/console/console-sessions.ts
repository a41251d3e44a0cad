import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IdemStore } from 'idem';

/** One signed-in operator: who, the form token bound to the session, and until when it lasts. */
export interface ConsoleSession {
  /** The cookie's value (the store keeps only its digest). */
  readonly id: string;
  readonly principal: string;
  /** Every form carries it; a POST without it (or with another) is refused. */
  readonly csrf: string;
  /** Epoch ms. */
  readonly expiresAt: number;
}

/** 256 random bits, base64url. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Whether two tokens are equal, in time independent of where they differ. */
export function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** What the store keys a session by: the SHA-256 of the cookie's value, so a reader of the table cannot sign in. */
function sessionDigest(id: string): string {
  return createHash('sha256').update(id).digest('base64url');
}

/**
 * The console's sessions, kept in the store's database (`store.sessions`), so that every instance
 * on it shares them and a restart keeps them: a random id in an HttpOnly, SameSite=Strict cookie
 * maps to the operator's principal and CSRF token until `ttlMs` after sign-in (or the credential's
 * own expiry, if sooner), and only while `stillValid(credential)` holds in the instance that is
 * asked (a revoked token signs its sessions out everywhere).
 */
export class ConsoleSessions {
  readonly #store: Pick<IdemStore, 'sessions'>;
  readonly #stillValid: (credential: string) => boolean;
  readonly #ttlMs: number;

  constructor(
    store: Pick<IdemStore, 'sessions'>,
    stillValid: (credential: string) => boolean,
    options: { ttlMs?: number } = {},
  ) {
    this.#store = store;
    this.#stillValid = stillValid;
    this.#ttlMs = options.ttlMs ?? 8 * 3_600_000;
  }

  /** A new session for `principal`, lasting until `now + ttl` (or `notAfter`, if sooner). */
  async create(
    principal: string,
    now: number,
    credential: string,
    notAfter?: number,
  ): Promise<ConsoleSession> {
    const session: ConsoleSession = {
      id: randomToken(),
      principal,
      csrf: randomToken(),
      expiresAt: Math.min(now + this.#ttlMs, notAfter ?? Number.POSITIVE_INFINITY),
    };
    await this.#store.sessions.put({
      id: sessionDigest(session.id),
      principal,
      csrf: session.csrf,
      credential,
      createdAt: now,
      expiresAt: session.expiresAt,
    });
    return session;
  }

  /** The live session with this id, or undefined (unknown, expired, or its credential revoked: then deleted). */
  async get(id: string | undefined, now: number): Promise<ConsoleSession | undefined> {
    if (id === undefined || id === '') return undefined;
    const digest = sessionDigest(id);
    const stored = await this.#store.sessions.get(digest, now);
    if (stored === undefined) return undefined;
    if (!this.#stillValid(stored.credential)) {
      await this.#store.sessions.delete(digest);
      return undefined;
    }
    return { id, principal: stored.principal, csrf: stored.csrf, expiresAt: stored.expiresAt };
  }

  /** Signs a session out, in every instance. */
  async delete(id: string): Promise<void> {
    await this.#store.sessions.delete(sessionDigest(id));
  }
}
