import type { Clock } from '../core/clock.js';
import { IdemError } from '../core/errors.js';
import type { RetryPolicy } from '../core/retry-policy.js';
import type { ClientLoggerOption } from '../client/client-logger.js';
import { IdemClient } from '../client/idem-client.js';
import type { IntentJournal, JournalIntent } from '../client/intent-journal.js';
import type { IntentOutcome } from '../client/intent-outcome.js';
import { callIdentity, validRunId } from './call-identity.js';
import { frameworkConnection, type FrameworkSend } from './framework-connection.js';
import { argsWithoutKey } from './key-schema.js';

/** What every framework adapter takes: the journal, the run the calls belong to, the retry policy. */
export interface KeyedCallsOptions {
  /** Where each call's key and arguments are recorded before its first send. */
  journal: IntentJournal;
  /**
   * The run or conversation the tool calls belong to (with the framework's call id, it makes the
   * key). Keep it with the run's saved state: a restarted agent passes the same one to resume.
   */
  runId: string;
  /** Total deadline, per-attempt timeout, attempts, backoff. Default DEFAULT_RETRY_POLICY. */
  policy?: Partial<RetryPolicy>;
  /** The argument that carries the key. Default `idempotency_key`. */
  keyField?: string;
  /** The status tool that reports an operation by `operation_id`. Default `get_operation`. */
  operationTool?: string;
  /** Pause between polls of the status tool, ms. Default 1000. */
  pollIntervalMs?: number;
  /** One `idem.client.outcome` line per call, one `idem.agent.unkeyed_tools` line per tool list. */
  logger?: ClientLoggerOption;
  clock?: Clock;
}

/**
 * The part every adapter shares: one keyed call per framework tool call. The key is made from the
 * run id and the framework's call id (`callIdentity`), recorded in the journal before the first
 * send, and sent on every attempt (the adapter's retries within the deadline, the framework's own
 * resends, a re-run after a crash); the `IdemClient` drives it through the framework's own client.
 */
export class KeyedCalls {
  readonly journal: IntentJournal;
  readonly runId: string;
  readonly keyField: string;
  readonly operationTool: string;
  readonly #client: IdemClient;

  constructor(send: FrameworkSend, options: KeyedCallsOptions) {
    if (!validRunId(options.runId)) {
      throw new IdemError(
        'invalid_argument',
        'runId must be 1 to 120 printable ASCII characters: the run or conversation the calls belong to',
      );
    }
    this.journal = options.journal;
    this.runId = options.runId;
    this.keyField = options.keyField ?? 'idempotency_key';
    this.operationTool = options.operationTool ?? 'get_operation';
    const connection = frameworkConnection(send);
    this.#client = new IdemClient({
      journal: options.journal,
      connect: async () => connection,
      keyField: this.keyField,
      operationTool: this.operationTool,
      ...(options.policy === undefined ? {} : { policy: options.policy }),
      ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
    });
  }

  /**
   * Performs the tool call `callId` of this run: records its key before the first send (unless the
   * journal has it already: then it resumes it, same key), and returns its typed outcome. The same
   * call id with another tool or other arguments is refused (`payload_conflict`, nothing sent).
   */
  async call(
    tool: string,
    rawArgs: unknown,
    callId: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<IntentOutcome> {
    if (typeof callId !== 'string' || callId === '') {
      throw new IdemError('invalid_argument', 'the framework gave no tool call id');
    }
    const args = argsWithoutKey(rawArgs, this.keyField);
    const { intentId, key } = callIdentity(this.runId, callId);
    if (this.journal.get(intentId) === undefined) {
      try {
        this.journal.begin({ intentId, tool, keyField: this.keyField, key, args });
      } catch (error) {
        // Another process sharing the journal recorded it first: the call below resumes theirs.
        if (!(error instanceof IdemError && error.code === 'payload_conflict')) throw error;
      }
    }
    return this.#client.call(tool, args, { intentId, ...signalOf(options) });
  }

  /** The calls of this run that are not settled (pending or outcome_unknown), oldest first. */
  unsettled(): JournalIntent[] {
    const prefix = `${this.runId}/`;
    return this.journal.unsettled().filter((intent) => intent.intentId.startsWith(prefix));
  }

  /** Resumes the call `callId` of this run from the journal: its own key and arguments. */
  async resume(callId: string, options: { signal?: AbortSignal } = {}): Promise<IntentOutcome> {
    return this.#client.resume(callIdentity(this.runId, callId).intentId, signalOf(options));
  }

  /** Resumes a journal intent of this run (one `unsettled()` listed) by its intent id. */
  async resumeIntent(intentId: string, options: { signal?: AbortSignal } = {}): Promise<IntentOutcome> {
    return this.#client.resume(intentId, signalOf(options));
  }
}

function signalOf(options: { signal?: AbortSignal }): { signal?: AbortSignal } {
  return options.signal === undefined ? {} : { signal: options.signal };
}
