import type { ErrorCode } from '../core/errors.js';
import { intentDigest } from '../core/intent-digest.js';
import { silentLogger, type LogFields, type Logger } from '../core/logger.js';
import type { StartedCallSpan } from '../telemetry/call-span.js';
import { recordCall } from '../telemetry/record-call.js';
import { jsonLine } from './json-logger.js';

/** The event name of the one line every tool call logs. */
export const CALL_EVENT = 'idem.call';

/** What one `idem.call` line says (docs/server.md, "Logs", lists each field). Ids, names, codes: no values. */
export interface CallLine {
  /** `create_note@v1` for a mutating tool, the bare name (`get_operation`) for a read tool. */
  readonly tool: string;
  /** This call's own id: new on every call, so the attempts of one action can be told apart. */
  readonly attemptId: string;
  /** The operation the call executed, replayed or read, when there is one. */
  readonly operationId?: string | undefined;
  /**
   * `intentDigest` of the action the call is about, when it names one; or a function that computes
   * it, called only when something records it (a logger other than `silentLogger`, or a span).
   */
  readonly intent?: string | (() => string | undefined) | undefined;
  readonly principal?: string | undefined;
  readonly workspace?: string | undefined;
  /** `executed`, `replayed`, `accepted`, ..., `ok` for a read tool, or an error code. */
  readonly outcome: string;
  /** The error code when the call failed, which decides the level. */
  readonly errorCode?: ErrorCode | undefined;
  readonly durationMs: number;
  /**
   * The request's `_meta`, whose `traceparent` and `tracestate` the call's span continues
   * (OpenTelemetry, `recordCall`); never logged.
   */
  readonly traceContext?: Readonly<Record<string, unknown>> | undefined;
  /** The call's span when it was started as the call began (`startCallSpan`); never logged. */
  readonly span?: StartedCallSpan | undefined;
}

/**
 * Writes the one `idem.call` line of a tool call: at `error` when it ended `internal` or
 * `unavailable` (something an operator must look at), else at `info`; records its span and
 * metrics (`recordCall`, a no-op without a registered OpenTelemetry provider). `extra` carries what the
 * caller adds for an error (its source, name, message and stack; storage cause fields), never an
 * argument value. Never throws: a logger that throws or rejects is reported on stderr
 * (`idem.log_failed`).
 */
export function logCall(logger: Logger, line: CallLine, extra: LogFields = {}): void {
  recordCall(line);
  // Nothing to write: no line is built (a server that logs nowhere pays nothing for it).
  if (logger === silentLogger) return;
  const fields: LogFields = {
    attempt_id: line.attemptId,
    operation_id: line.operationId,
    intent: typeof line.intent === 'function' ? line.intent() : line.intent,
    tool: line.tool,
    principal: line.principal,
    workspace: line.workspace,
    outcome: line.outcome,
    duration_ms: Math.round(line.durationMs * 1000) / 1000,
    ...extra,
  };
  for (const [name, value] of Object.entries(fields)) if (value === undefined) delete fields[name];
  const lost = (error: unknown) => {
    // A logger that fails never changes what the call answers (it may have committed): say so on
    // stderr, with the line it could not write.
    const name = error instanceof Error ? error.name : typeof error;
    process.stderr.write(jsonLine('error', 'idem.log_failed', { ...fields, log_error: name }));
  };
  try {
    const level = line.errorCode === 'internal' || line.errorCode === 'unavailable' ? 'error' : 'info';
    // A logger typed `void` may still be async: its rejection is reported, never left unhandled.
    const returned: unknown = logger[level](CALL_EVENT, fields);
    if (isThenable(returned)) returned.then(undefined, lost);
  } catch (error) {
    lost(error);
  }
}

/**
 * The intent digest of a call whose parts came from the wire: computed only when every part is a
 * string (a refused call may lack its key or workspace), so a refusal that carried the same key as
 * its corrected retry logs the same digest.
 */
export function intentOfParts(
  principal: unknown,
  workspace: unknown,
  operation: string,
  key: unknown,
): string | undefined {
  if (typeof principal !== 'string' || typeof workspace !== 'string' || typeof key !== 'string') {
    return undefined;
  }
  return intentDigest({ principal, workspace, operation, key });
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
