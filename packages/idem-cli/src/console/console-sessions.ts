import { randomBytes, timingSafeEqual } from 'node:crypto';

/** One signed-in operator: who, the form token bound to the session, and until when it lasts. */
export interface ConsoleSession {
  readonly id: string;
  readonly principal: string;
  /** Every form carries it; a POST without it (or with another) is refused. */
  readonly csrf: string;
  /** Epoch ms. */
  readonly expiresAt: number;
  /** Checked again on every request: false once the credential is revoked. */
  readonly stillValid: () => boolean;
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

/**
 * The console's sessions, in memory (a restart signs everyone out): a random id in an HttpOnly,
 * SameSite=Strict cookie maps to the operator's principal and CSRF token, until `ttlMs` after
 * sign-in or until the credential it came from stops being valid. At most `max` live sessions (the
 * oldest goes first).
 */
export class ConsoleSessions {
  readonly #byId = new Map<string, ConsoleSession>();
  readonly #ttlMs: number;
  readonly #max: number;

  constructor(options: { ttlMs?: number; max?: number } = {}) {
    this.#ttlMs = options.ttlMs ?? 8 * 3_600_000;
    this.#max = options.max ?? 1000;
  }

  /** A new session for `principal`, lasting until `now + ttl` (or `notAfter`, if sooner). */
  create(principal: string, now: number, stillValid: () => boolean, notAfter?: number): ConsoleSession {
    for (const [id, session] of this.#byId) if (session.expiresAt <= now) this.#byId.delete(id);
    while (this.#byId.size >= this.#max) {
      const oldest = this.#byId.keys().next().value as string;
      this.#byId.delete(oldest);
    }
    const session: ConsoleSession = {
      id: randomToken(),
      principal,
      csrf: randomToken(),
      expiresAt: Math.min(now + this.#ttlMs, notAfter ?? Number.POSITIVE_INFINITY),
      stillValid,
    };
    this.#byId.set(session.id, session);
    return session;
  }

  /** The live session with this id, or undefined (unknown, expired or revoked: then forgotten). */
  get(id: string | undefined, now: number): ConsoleSession | undefined {
    if (id === undefined) return undefined;
    const session = this.#byId.get(id);
    if (session === undefined) return undefined;
    if (session.expiresAt <= now || !session.stillValid()) {
      this.#byId.delete(id);
      return undefined;
    }
    return session;
  }

  /** Signs a session out. */
  delete(id: string): void {
    this.#byId.delete(id);
  }
}
