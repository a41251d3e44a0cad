/**
 * The closed set of error codes Idem returns. The strings are public API: callers match on `code`,
 * never on `instanceof` (two bundled copies of this package would not share classes).
 */
export const ERROR_CODES = [
  'invalid_argument',
  'payload_conflict',
  'forbidden',
  'not_found',
  'key_expired',
  'version_conflict',
  'busy',
  'unavailable',
  'in_progress',
  'outcome_unknown',
  'aborted',
  'internal',
] as const;

/** One of `ERROR_CODES`: the stable code of an `IdemError`, public API. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * What a caller can do next, as a fact that the front end puts in its own words (the MCP layer
 * names its status tool and the operators' command): `follow_operation`, read the operation by its
 * id (a retry with the same key is safe too); `operator_settles`, an operator must establish whether
 * the action took effect and settle the operation; `new_key`, nothing was done and trying again is a
 * new action with a new key; `inspect_operation`, read the operation by its id to see what happened
 * (a retry with the same key is refused again), and use a new key for a new action. The executor
 * states it; it never writes a tool's name.
 */
export const NEXT_STEPS = ['follow_operation', 'operator_settles', 'new_key', 'inspect_operation'] as const;

/** One of `NEXT_STEPS`: what a caller can do next, as a fact. */
export type NextStep = (typeof NEXT_STEPS)[number];

/** Whether a caller may retry the same call unchanged, per code, unless an error says otherwise. */
const RETRYABLE_BY_DEFAULT: Record<ErrorCode, boolean> = {
  invalid_argument: false,
  payload_conflict: false,
  forbidden: false,
  not_found: false,
  key_expired: false,
  // The key belongs to a version of the operation this server does not answer for: a retry repeats it.
  version_conflict: false,
  busy: true,
  // Adapters always say: true for a transient condition (disk full, connection refused or lost),
  // false for one an operator must fix (read-only database, I/O error, no such database).
  unavailable: false,
  in_progress: true,
  outcome_unknown: false,
  // The caller's own signal ended the call before anything committed: the same call may be sent again.
  aborted: true,
  internal: false,
};

/** What an `IdemError` carries beside its code and message. */
export interface IdemErrorOptions {
  /** Whether the same call may succeed when sent again. Default: what the code implies. */
  retryable?: boolean;
  /** A hint for when a retry may succeed, in milliseconds. */
  retryAfterMs?: number;
  /** The operation the error is about, when one exists. */
  operationId?: string;
  /** What the caller should do next, in one sentence a model can follow. Wins over `nextStep`. */
  nextAction?: string;
  /** What the caller should do next as a fact (with `operationId`), for the front end to word. */
  nextStep?: NextStep;
  /** What went wrong underneath, kept for logs (`Error.cause`); never shown to a caller. */
  cause?: unknown;
}

/**
 * What an `unavailable` error is about, safe to log and to show: the driver's code (SQLITE_FULL,
 * ECONNREFUSED, 3D000, ...) and the file or the server, never a body or an argument value.
 */
export interface StorageCause {
  readonly driverCode: string;
  /** The SQLite file, when the fault is about one. */
  readonly path?: string;
  /** `host:port` of the PostgreSQL server, when the fault is about one. */
  readonly server?: string;
}

/** The error's cause when it is a StorageCause (an `unavailable` error from an adapter). */
export function storageCauseOf(error: { cause?: unknown }): StorageCause | undefined {
  const cause = error.cause as Partial<StorageCause> | null | undefined;
  return typeof cause === 'object' && cause !== null && typeof cause.driverCode === 'string'
    ? (cause as StorageCause)
    : undefined;
}

/** The log fields of an error's StorageCause (`driver_code`, `db_path`, `db_server`), or none. */
export function storageCauseFields(error: unknown): Record<string, string> {
  const cause = typeof error === 'object' && error !== null ? storageCauseOf(error) : undefined;
  if (cause === undefined) return {};
  return {
    driver_code: cause.driverCode,
    ...(cause.path === undefined ? {} : { db_path: cause.path }),
    ...(cause.server === undefined ? {} : { db_server: cause.server }),
  };
}

/**
 * An `unavailable` error: the storage cannot take the call now. Retryable ones (a transient
 * condition) carry `retryAfterMs`; the next action says whether to retry or to call an operator,
 * and that a retry with the same key is safe in both cases.
 */
export function storageUnavailable(
  message: string,
  options: { retryable: boolean; retryAfterMs?: number; cause: StorageCause },
): IdemError {
  return new IdemError('unavailable', message, {
    ...options,
    nextAction: options.retryable
      ? 'Retry with the same idempotency_key and arguments after retry_after_ms: nothing was committed.'
      : 'An operator must fix the storage (see the message); afterwards a retry with the same idempotency_key and arguments is safe.',
  });
}

/** The one error class of Idem. Every failure that reaches a caller is one of these. */
export class IdemError extends Error {
  override readonly name = 'IdemError';
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly operationId: string | undefined;
  readonly nextAction: string | undefined;
  readonly nextStep: NextStep | undefined;

  constructor(code: ErrorCode, message: string, options: IdemErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? RETRYABLE_BY_DEFAULT[code];
    this.retryAfterMs = options.retryAfterMs;
    this.operationId = options.operationId;
    this.nextAction = options.nextAction;
    this.nextStep = options.nextStep;
  }
}

/** True for an IdemError from any copy of this package: checks the shape, not the class. */
export function isIdemError(value: unknown): value is IdemError {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as { name?: unknown; code?: unknown };
  return (
    candidate.name === 'IdemError' &&
    typeof candidate.code === 'string' &&
    (ERROR_CODES as readonly string[]).includes(candidate.code)
  );
}

/**
 * True when `value` is how an abort surfaces: the reason of `signal` once it aborted, or an error
 * named `AbortError` (a signal's default reason, `throwIfAborted()`, Node's own aborted APIs).
 */
export function isAbortReason(value: unknown, signal?: AbortSignal): boolean {
  if (signal?.aborted === true && value === signal.reason) return true;
  return typeof value === 'object' && value !== null && (value as { name?: unknown }).name === 'AbortError';
}

/**
 * Wraps anything thrown into an IdemError, keeping IdemErrors as they are. An abort (see
 * isAbortReason; pass the call's `signal` so that a reason of your own is recognised too) becomes
 * `aborted`, never `internal`: it says nothing about the tool or the storage.
 */
export function toIdemError(value: unknown, message = 'internal error', signal?: AbortSignal): IdemError {
  if (isIdemError(value)) return value;
  if (isAbortReason(value, signal)) {
    return new IdemError('aborted', 'the call was aborted by its caller before it completed', {
      cause: value,
    });
  }
  return new IdemError('internal', message, { cause: value });
}
