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
  'busy',
  'in_progress',
  'outcome_unknown',
  'internal',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** Whether a caller may retry the same call unchanged, per code, unless an error says otherwise. */
const RETRYABLE_BY_DEFAULT: Record<ErrorCode, boolean> = {
  invalid_argument: false,
  payload_conflict: false,
  forbidden: false,
  not_found: false,
  key_expired: false,
  busy: true,
  in_progress: true,
  outcome_unknown: false,
  internal: false,
};

export interface IdemErrorOptions {
  retryable?: boolean;
  /** A hint for when a retry may succeed, in milliseconds. */
  retryAfterMs?: number;
  operationId?: string;
  /** What the caller should do next, in one sentence a model can follow. */
  nextAction?: string;
  cause?: unknown;
}

/** The one error class of Idem. Every failure that reaches a caller is one of these. */
export class IdemError extends Error {
  override readonly name = 'IdemError';
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly operationId: string | undefined;
  readonly nextAction: string | undefined;

  constructor(code: ErrorCode, message: string, options: IdemErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? RETRYABLE_BY_DEFAULT[code];
    this.retryAfterMs = options.retryAfterMs;
    this.operationId = options.operationId;
    this.nextAction = options.nextAction;
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

/** Wraps anything thrown into an IdemError, keeping IdemErrors as they are. */
export function toIdemError(value: unknown, message = 'internal error'): IdemError {
  if (isIdemError(value)) return value;
  return new IdemError('internal', message, { cause: value });
}
