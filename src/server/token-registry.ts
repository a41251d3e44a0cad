import { readFileSync, statSync } from 'node:fs';
import { z } from 'zod';
import { IdemError } from '../core/errors.js';

export interface Grant {
  readonly principal: string;
  readonly workspaces: readonly string[];
}

const tokensFileSchema = z.record(
  z.string().min(16, 'tokens must be at least 16 characters'),
  z
    .object({ principal: z.string().min(1).max(200), workspaces: z.array(z.string().min(1).max(128)) })
    .strict(),
);

/**
 * Bearer tokens and the workspaces each principal holds. Loaded from a JSON file
 * `{"<token>": {"principal": "<id>", "workspaces": ["<ws>"]}}` and re-read when the file changes, so
 * that revoking a workspace takes effect without a restart (and then also refuses replays).
 */
export class TokenRegistry {
  #byToken = new Map<string, Grant>();
  #byPrincipal = new Map<string, Set<string>>();
  readonly #path: string | undefined;
  #mtimeMs = -1;
  #checkedAt = 0;
  readonly #recheckMs: number;

  private constructor(path: string | undefined, recheckMs: number) {
    this.#path = path;
    this.#recheckMs = recheckMs;
  }

  /** Reads and validates a tokens file; throws `invalid_argument` with what is wrong. */
  static fromFile(path: string, options: { recheckMs?: number } = {}): TokenRegistry {
    const registry = new TokenRegistry(path, options.recheckMs ?? 1000);
    registry.reload();
    return registry;
  }

  /** A fixed grant, for dev mode and stdio: one principal, its workspaces, no tokens. */
  static fixed(grant: Grant): TokenRegistry {
    const registry = new TokenRegistry(undefined, Number.POSITIVE_INFINITY);
    registry.#set({}, [grant]);
    return registry;
  }

  get fromFile(): boolean {
    return this.#path !== undefined;
  }

  /** The grant for a bearer token, or undefined for an unknown one. */
  grantFor(token: string): Grant | undefined {
    this.#maybeReload();
    return this.#byToken.get(token);
  }

  holds(principal: string, workspace: string): boolean {
    this.#maybeReload();
    return this.#byPrincipal.get(principal)?.has(workspace) ?? false;
  }

  reload(): void {
    if (this.#path === undefined) return;
    let parsed: unknown;
    try {
      this.#mtimeMs = statSync(this.#path).mtimeMs;
      parsed = JSON.parse(readFileSync(this.#path, 'utf8'));
    } catch (cause) {
      throw new IdemError(
        'invalid_argument',
        `cannot read tokens file ${this.#path}: ${(cause as Error).message}`,
        {
          cause,
        },
      );
    }
    const result = tokensFileSchema.safeParse(parsed);
    if (!result.success) {
      const problem = result.error.issues[0];
      throw new IdemError(
        'invalid_argument',
        `tokens file ${this.#path} is invalid at ${problem?.path.join('.') || 'top level'}: ${problem?.message}`,
      );
    }
    this.#set(result.data, Object.values(result.data));
  }

  #set(byToken: Record<string, Grant>, grants: Grant[]): void {
    this.#byToken = new Map(Object.entries(byToken));
    const byPrincipal = new Map<string, Set<string>>();
    for (const grant of grants) {
      const set = byPrincipal.get(grant.principal) ?? new Set<string>();
      for (const ws of grant.workspaces) set.add(ws);
      byPrincipal.set(grant.principal, set);
    }
    this.#byPrincipal = byPrincipal;
  }

  #maybeReload(): void {
    if (this.#path === undefined) return;
    const now = performance.now();
    if (now - this.#checkedAt < this.#recheckMs) return;
    this.#checkedAt = now;
    try {
      if (statSync(this.#path).mtimeMs !== this.#mtimeMs) this.reload();
    } catch {
      // Keep the last good grants if the file is mid-write or invalid; the next check retries.
    }
  }
}
