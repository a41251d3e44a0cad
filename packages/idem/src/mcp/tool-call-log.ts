import { systemClock } from '../core/clock.js';
import type { IdemError } from '../core/errors.js';
import { intentDigest } from '../core/intent-digest.js';
import { newAttemptId } from '../core/ids.js';
import type { LogFields, Logger } from '../core/logger.js';
import type { OperationIdentity } from '../core/operation-identity.js';
import { intentOfParts, logCall } from '../log/log-call.js';

/** The operation a read tool's call reported or changed, as its `idem.call` line names it. */
export interface ReadOperation {
  readonly operationId: string;
  readonly identity: Pick<OperationIdentity, 'principal' | 'workspace' | 'operation' | 'key'>;
}

/**
 * The `idem.call` line of one tool call answered in the MCP layer (a refusal before the executor,
 * or a read tool): started when the call arrives, written once by `end`. Logs ids, names and codes
 * only: never the key or an argument value (the intent is a digest).
 */
export class ToolCallLog {
  readonly #logger: Logger;
  readonly #tool: string;
  readonly #started = systemClock.monotonic();
  readonly #attemptId = newAttemptId(systemClock.now());
  #principal: string | undefined;
  #workspace: string | undefined;
  #intent: string | undefined;
  #operationId: string | undefined;
  readonly #traceContext: Readonly<Record<string, unknown>> | undefined;

  /** `traceContext` is the request's `_meta` (see `ToolCallContext.meta`), which its span continues. */
  constructor(
    logger: Logger,
    tool: string,
    principal: string | undefined,
    traceContext?: Readonly<Record<string, unknown>>,
  ) {
    this.#logger = logger;
    this.#tool = tool;
    this.#principal = principal;
    this.#traceContext = traceContext;
  }

  /** The workspace the call acts in, once it is a valid argument. */
  workspace(workspace: unknown): void {
    if (typeof workspace === 'string') this.#workspace = workspace;
  }

  /** A mutating call's intent, from its raw parts (see `intentOfParts`). */
  intent(workspace: unknown, operation: string, key: unknown): void {
    this.#intent = intentOfParts(this.#principal, workspace, operation, key);
  }

  /** The operation a read tool reported: its id, workspace and the intent of its action. */
  operation(record: ReadOperation): void {
    this.#operationId = record.operationId;
    this.#workspace ??= record.identity.workspace;
    this.#intent = intentDigest(record.identity);
  }

  /** Writes the line: `outcome` for a success, or the error's code (and `extra` fields for it). */
  end(result: { outcome: string } | { error: IdemError; extra?: LogFields }): void {
    const failed = 'error' in result;
    logCall(
      this.#logger,
      {
        tool: this.#tool,
        attemptId: this.#attemptId,
        operationId: this.#operationId ?? (failed ? result.error.operationId : undefined),
        intent: this.#intent,
        principal: this.#principal,
        workspace: this.#workspace,
        outcome: failed ? result.error.code : result.outcome,
        errorCode: failed ? result.error.code : undefined,
        durationMs: systemClock.monotonic() - this.#started,
        traceContext: this.#traceContext,
      },
      failed ? result.extra : undefined,
    );
  }
}
