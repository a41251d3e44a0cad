import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { IdemError, silentLogger, type Logger } from 'idem';
import { unstorableText } from 'idem/store';
import { jsonDuplicateKey, type DuplicateKey } from './json-duplicate-key.js';
import { jsonErrorPosition } from './json-error-position.js';

/**
 * What one bearer token may do: act as `principal`, in these workspaces only. A token with
 * `role: 'operator'` is an operator's credential instead: it opens the operator console (as
 * `principal`, kept in the audit of what it does) and calls no tool.
 */
export interface Grant {
  readonly principal: string;
  readonly workspaces: readonly string[];
  /** `operator`: the console only; absent (or `tools`): the MCP tools only. */
  readonly role?: 'operator' | 'tools';
}

/** Whether a grant is an operator's (the console's) rather than tool access. */
export function isOperatorGrant(grant: Grant): boolean {
  return grant.role === 'operator';
}

export const MIN_TOKEN_LENGTH = 16;
const MAX_PRINCIPAL_LENGTH = 200;
const MAX_WORKSPACE_LENGTH = 128;

export interface TokenRegistryOptions {
  /** How often a lookup may check the file for a change, ms. Default 1000. */
  recheckMs?: number;
  /** Where a failed or successful re-read is reported. */
  logger?: Logger;
}

/**
 * Bearer tokens, each with its own grant. Loaded from a JSON file
 * `{"<token>": {"principal": "<id>", "workspaces": ["<ws>"]}}` (an operator's:
 * `{"principal": "<id>", "role": "operator"}`); a token acts in ITS workspaces only,
 * even when another token names the same principal. Re-read when the file changes, so that revoking
 * takes effect without a restart (and then also refuses replays). A re-read that fails (the file is
 * deleted, unreadable, not UTF-8, not JSON, lists a token twice, or has an invalid entry) fails
 * closed: it is logged at once as
 * `tokens.reload_failed` and every token is refused until a valid file is back (`tokens.reloaded`).
 * No message or log line names a token: entries are named by their position in the file.
 */
export class TokenRegistry {
  #byToken = new Map<string, Grant>();
  /** `#byToken` by digest, made again whenever `#byToken` is replaced (a re-read). */
  #byDigest = new Map<string, Grant>();
  #digestsOf: Map<string, Grant> | undefined;
  readonly #path: string | undefined;
  readonly #fixedGrant: Grant | undefined;
  readonly #recheckMs: number;
  readonly #logger: Logger;
  /** What the file looked like when last read, or why it could not be read; a change means re-read. */
  #stamp = '';
  #failed = false;
  #checkedAt = Number.NEGATIVE_INFINITY;

  private constructor(
    path: string | undefined,
    fixedGrant: Grant | undefined,
    options: TokenRegistryOptions,
  ) {
    this.#path = path;
    this.#fixedGrant = fixedGrant;
    this.#recheckMs = options.recheckMs ?? 1000;
    this.#logger = options.logger ?? silentLogger;
  }

  /**
   * Reads and validates a tokens file; throws `invalid_argument` saying what is wrong and where
   * (entry number, or line and column), never quoting a token.
   */
  static fromFile(path: string, options: TokenRegistryOptions = {}): TokenRegistry {
    const registry = new TokenRegistry(path, undefined, options);
    let stamp = '';
    try {
      stamp = fileStamp(path);
    } catch {
      // readTokensFile says what is wrong; an empty stamp re-reads at the next check.
    }
    registry.#byToken = readTokensFile(path);
    registry.#stamp = stamp;
    registry.#checkedAt = performance.now();
    return registry;
  }

  /** No tokens: the one identity of dev mode or stdio, which its transport attaches itself. */
  static fixed(grant: Grant): TokenRegistry {
    return new TokenRegistry(undefined, grant, { recheckMs: Number.POSITIVE_INFINITY });
  }

  /** No tokens at all (a server that authenticates otherwise, e.g. with JWT access tokens only). */
  static empty(): TokenRegistry {
    return new TokenRegistry(undefined, undefined, { recheckMs: Number.POSITIVE_INFINITY });
  }

  get fromFile(): boolean {
    return this.#path !== undefined;
  }

  /** The identity of a registry made with `fixed`. */
  get fixedGrant(): Grant | undefined {
    return this.#fixedGrant;
  }

  /** The grant of a bearer token; undefined for an unknown one, and for every one while the file is invalid. */
  grantFor(token: string): Grant | undefined {
    this.#maybeReload();
    return this.#failed ? undefined : this.#byToken.get(token);
  }

  /**
   * The grant of the token whose SHA-256 digest (base64url) is `digest` (tokenDigest), as
   * `grantFor` answers it: so that a console session stored as a digest is revoked with its token.
   */
  grantForDigest(digest: string): Grant | undefined {
    this.#maybeReload();
    if (this.#failed) return undefined;
    if (this.#digestsOf !== this.#byToken) {
      this.#byDigest = new Map([...this.#byToken].map(([token, grant]) => [tokenDigest(token), grant]));
      this.#digestsOf = this.#byToken;
    }
    return this.#byDigest.get(digest);
  }

  /**
   * Also checks the file every `recheckMs` without waiting for a lookup, so that a broken file is
   * reported (and a deleted one revokes) when it happens, not at the next request. Returns a stop.
   */
  watch(): () => void {
    if (this.#path === undefined || !Number.isFinite(this.#recheckMs)) return () => undefined;
    const timer = setInterval(() => this.#maybeReload(), Math.max(this.#recheckMs, 10));
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Checks the file now rather than at the next lookup after `recheckMs`. */
  reload(): void {
    this.#checkedAt = Number.NEGATIVE_INFINITY;
    this.#maybeReload();
  }

  #maybeReload(): void {
    const path = this.#path;
    if (path === undefined) return;
    const now = performance.now();
    if (now - this.#checkedAt < this.#recheckMs) return;
    this.#checkedAt = now;
    let stamp: string;
    try {
      stamp = fileStamp(path);
    } catch (error) {
      stamp = `unreadable:${(error as NodeJS.ErrnoException).code ?? 'error'}`;
    }
    if (stamp === this.#stamp) return;
    this.#stamp = stamp;
    try {
      this.#byToken = readTokensFile(path);
    } catch (error) {
      this.#byToken = new Map();
      this.#failed = true;
      this.#logger.error('tokens.reload_failed', {
        file: path,
        reason: (error as Error).message,
        refused: 'every token, until a valid file is back',
      });
      return;
    }
    this.#failed = false;
    this.#logger.info('tokens.reloaded', { file: path, tokens: this.#byToken.size });
  }
}

/** A token's SHA-256 digest, base64url: what a console session keeps instead of the token. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

/** Changes whenever the file is rewritten, replaced (rename) or touched. */
function fileStamp(path: string): string {
  const stat = statSync(path);
  return `${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`;
}

function readTokensFile(path: string): Map<string, Grant> {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'it does not exist' : (code ?? 'read error');
    throw new IdemError('invalid_argument', `cannot read tokens file ${path}: ${why}`, { cause });
  }
  const invalid = (problem: string) =>
    new IdemError('invalid_argument', `tokens file ${path} is invalid: ${problem}`);
  let text: string;
  try {
    // Not U+FFFD for what is not UTF-8: two different tokens or principals must not become one.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw invalid('not UTF-8');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // The parser's own message may quote the text around the error, a token included.
    const at = jsonErrorPosition(text);
    throw invalid(`not JSON${at === undefined ? '' : ` (line ${at.line}, column ${at.column})`}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw invalid('the top level must be an object of token: {principal, workspaces}');
  }
  // JSON.parse keeps the last of two equal keys: one token listed twice would silently get one grant.
  const repeated = jsonDuplicateKey(text);
  if (repeated !== undefined) throw invalid(repeatedKeyProblem(repeated));
  const byToken = new Map<string, Grant>();
  Object.entries(parsed).forEach(([token, value], index) => {
    const problem = entryProblem(token, value);
    if (problem !== undefined) throw invalid(`entry ${index + 1}: ${problem}`);
    const entry = value as Grant;
    byToken.set(token, entry.workspaces === undefined ? { ...entry, workspaces: [] } : entry);
  });
  return byToken;
}

/** What is wrong with one entry, in words that never repeat the token. */
function entryProblem(token: string, value: unknown): string | undefined {
  if (token.length < MIN_TOKEN_LENGTH) return `the token is shorter than ${MIN_TOKEN_LENGTH} characters`;
  if (/[\s\p{Cc}]/u.test(token)) return 'the token contains whitespace or control characters';
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'must be an object {principal, workspaces}';
  }
  const grant = value as Record<string, unknown>;
  const unknown = Object.keys(grant).find(
    (field) => field !== 'principal' && field !== 'workspaces' && field !== 'role',
  );
  if (unknown !== undefined) {
    return unknown.length <= 40 ? `unknown field ${JSON.stringify(unknown)}` : 'an unknown field';
  }
  if ('role' in grant && grant.role !== 'operator' && grant.role !== 'tools')
    return 'role: must be "operator" (the console) or "tools" (the default)';
  if (!('principal' in grant)) return 'principal: required';
  if (!isName(grant.principal, MAX_PRINCIPAL_LENGTH)) {
    return `principal: must be a string of 1 to ${MAX_PRINCIPAL_LENGTH} characters`;
  }
  const principalProblem = unstorableText(grant.principal);
  if (principalProblem !== undefined) return `principal: ${principalProblem}`;
  if (!('workspaces' in grant)) return grant.role === 'operator' ? undefined : 'workspaces: required';
  if (!Array.isArray(grant.workspaces)) return 'workspaces: must be an array of strings';
  const bad = grant.workspaces.findIndex((ws) => !isName(ws, MAX_WORKSPACE_LENGTH));
  if (bad !== -1) return `workspaces[${bad}]: must be a string of 1 to ${MAX_WORKSPACE_LENGTH} characters`;
  for (const [index, ws] of (grant.workspaces as string[]).entries()) {
    const problem = unstorableText(ws);
    if (problem !== undefined) return `workspaces[${index}]: ${problem}`;
  }
  return undefined;
}

/** A key given twice, named by entry number and place; a token (a top-level key) is never quoted. */
function repeatedKeyProblem(repeated: DuplicateKey): string {
  const { line, column } = repeated.position;
  const at = `(line ${line}, column ${column})`;
  const [entry] = repeated.path;
  if (entry === undefined) {
    return `entry ${repeated.second + 1} lists the token of entry ${repeated.first + 1} again ${at}`;
  }
  const field =
    repeated.path.length === 1 && repeated.key.length <= 40
      ? `the field ${JSON.stringify(repeated.key)}`
      : 'a field';
  return `entry ${entry + 1}: ${field} is given twice ${at}`;
}

function isName(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= max;
}
