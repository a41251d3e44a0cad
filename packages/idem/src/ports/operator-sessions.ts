import type { SignalOption } from './maybe-async.js';

/**
 * One signed-in operator's session of the console, as every instance sharing the store sees it.
 * `id` is what the store keys it by: the console stores a digest of the cookie's value, never the
 * value itself.
 */
export interface OperatorSession {
  readonly id: string;
  readonly principal: string;
  /** The form token bound to the session. */
  readonly csrf: string;
  /**
   * What the session came from, for a revocation check in any instance (a digest of an operator
   * token, `jwt`, `dev`); never a token.
   */
  readonly credential: string;
  /** Epoch ms. */
  readonly createdAt: number;
  /** Epoch ms: from then on the session is gone. */
  readonly expiresAt: number;
}

/** The console's sessions, kept in the store's database so that every instance shares them. */
export interface OperatorSessions {
  /** MUST store the session durably (replacing one with the same id) and MAY delete expired ones. */
  put(session: OperatorSession, options?: SignalOption): Promise<void>;
  /** The session with this id, or undefined when there is none or it expired at `now`. */
  get(id: string, now: number, options?: SignalOption): Promise<OperatorSession | undefined>;
  /** Deletes the session (sign-out); nothing when there is none. */
  delete(id: string, options?: SignalOption): Promise<void>;
}
