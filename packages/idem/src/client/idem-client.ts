import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../core/clock.js';
import { IdemError } from '../core/errors.js';
import { fingerprint } from '../core/fingerprint.js';
import type { Logger } from '../core/logger.js';
import { attemptTimeout, DEFAULT_RETRY_POLICY, planRetry, type RetryPolicy } from '../core/retry-policy.js';
import { callWithTimeout, type AttemptResult } from './call-with-timeout.js';
import { clientLogger, type ClientLoggerOption } from './client-logger.js';
import type { McpClient } from './connect-target.js';
import { IntentJournal, type JournalIntent } from './intent-journal.js';
import type { IntentOutcome, OutcomeFields, UnknownReason } from './intent-outcome.js';
import { followOperation } from './follow-operation.js';
import type { IntentRun } from './intent-run.js';
import { replyVerdict } from './reply-verdict.js';
import type { ToolError } from './tool-reply.js';

/** How an `IdemClient` is built: its intent journal, how it connects, and its retry defaults. */
export interface IdemClientOptions {
  /** Where intents are recorded before their first attempt. */
  journal: IntentJournal;
  /** Opens a connection; called at first use and whenever the previous one closed. Preferred. */
  connect?: (options: { signal?: AbortSignal }) => Promise<McpClient>;
  /** An already connected client; without `connect`, a closed one cannot be replaced. */
  client?: McpClient;
  /** Total deadline, per-attempt timeout, attempts, backoff. Default DEFAULT_RETRY_POLICY. */
  policy?: Partial<RetryPolicy>;
  /** The argument that carries the key. Default `idempotency_key`. */
  keyField?: string;
  /** The tool that reports an operation by `operation_id`. Default `get_operation`. */
  operationTool?: string;
  /** Pause between polls of the operation tool, ms. Default 1000. */
  pollIntervalMs?: number;
  /** Keep arguments in the journal so that a restarted process can resend them. Default true. */
  keepArguments?: boolean;
  clock?: Clock;
  /** For backoff jitter; tests pass a fixed one. */
  random?: () => number;
  /** Generates idempotency keys. Default a random UUID. */
  newKey?: () => string;
  /**
   * Receives one `idem.client.outcome` line per outcome: ids, codes, counts; never arguments or keys.
   * Whatever the Executor's `logger` takes (an Idem `Logger`, pino, `console`), or a plain function
   * that gets each line as JSON. A logger that throws never changes an outcome.
   */
  logger?: ClientLoggerOption;
}

/** How one `IdemClient.call` runs: its signal, your intent id, the retry policy it follows. */
export interface CallOptions {
  signal?: AbortSignal;
  /**
   * Your name for this intended action (1 to 200 printable ASCII characters). Calling again with the
   * same id and arguments resumes it with the same key instead of starting a second action; other
   * arguments (or another tool) under the same id are refused: a `failed` outcome with code
   * `payload_conflict`, nothing sent, the recorded intent untouched. Default: a new id.
   */
  intentId?: string;
  policy?: Partial<RetryPolicy>;
}

/** How `IdemClient.resume` carries on a journalled intent: signal, retry policy, its arguments if needed. */
export interface ResumeOptions {
  signal?: AbortSignal;
  policy?: Partial<RetryPolicy>;
  /**
   * Needed only for an intent recorded without its arguments and not yet given an operation id.
   * Arguments other than the recorded ones get the `payload_conflict` outcome, nothing sent.
   */
  args?: Record<string, unknown>;
}

const INTENT_ID = /^[\x20-\x7e]{1,200}$/;

/**
 * A retry-safe caller of mutating MCP tools. One `call` is one intended action: its key is generated
 * once and journaled before the first attempt; every retry (timeouts, dropped connections, `busy`,
 * `in_progress`) resends the same key and arguments within one total deadline on a monotonic clock,
 * with each attempt's timeout (also given to the SDK as RequestOptions.timeout, so that there is one
 * retry layer) capped by what remains, and full-jitter backoff that honours `retry_after_ms` when it
 * fits. Refusals (`payload_conflict`, `forbidden`, `invalid_argument`, `key_expired`, …) return at
 * once. An unfinished or uncertain operation is polled through the operation tool within the budget.
 * The answer is a typed `IntentOutcome`; expected failures are never thrown.
 */
export class IdemClient {
  readonly journal: IntentJournal;
  readonly #connect: IdemClientOptions['connect'];
  readonly #policy: RetryPolicy;
  readonly #keyField: string;
  readonly #operationTool: string;
  readonly #pollIntervalMs: number;
  readonly #keepArguments: boolean;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #newKey: () => string;
  readonly #logger: Logger;
  #client: McpClient | undefined;
  #connecting: Promise<McpClient> | undefined;
  readonly #ownsClient: boolean;

  constructor(options: IdemClientOptions) {
    if (options.connect === undefined && options.client === undefined) {
      throw new TypeError('IdemClient needs connect (preferred) or client');
    }
    this.journal = options.journal;
    this.#connect = options.connect;
    this.#client = options.client;
    this.#ownsClient = options.client === undefined;
    this.#policy = { ...DEFAULT_RETRY_POLICY, ...options.policy };
    this.#keyField = options.keyField ?? 'idempotency_key';
    this.#operationTool = options.operationTool ?? 'get_operation';
    this.#pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.#keepArguments = options.keepArguments ?? true;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
    this.#newKey = options.newKey ?? randomUUID;
    this.#logger = clientLogger(options.logger);
  }

  /** Performs one intended action: `args` without the key (the client owns it). */
  async call(tool: string, args: Record<string, unknown>, options: CallOptions = {}): Promise<IntentOutcome> {
    if (typeof tool !== 'string' || tool === '')
      throw new IdemError('invalid_argument', 'tool must be a name');
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      throw new IdemError('invalid_argument', 'arguments must be an object');
    }
    if (this.#keyField in args) {
      throw new IdemError(
        'invalid_argument',
        `leave ${this.#keyField} out: the client generates and keeps it`,
      );
    }
    const intentId = options.intentId ?? IntentJournal.newIntentId();
    if (!INTENT_ID.test(intentId)) {
      throw new IdemError('invalid_argument', 'intentId must be 1 to 200 printable ASCII characters');
    }
    options.signal?.throwIfAborted();
    const recorded = this.journal.get(intentId);
    const { begun, intent } =
      recorded === undefined ? this.#begin(intentId, tool, args) : { begun: false, intent: recorded };
    if (begun) return this.#drive(intent, args, options);
    if (intent.tool !== tool || intent.argsHash !== fingerprint(args)) {
      return this.#refuseOtherAction(intent, tool);
    }
    return this.resume(intentId, { ...options, args });
  }

  /**
   * Continues an intent from the journal (after a restart, or one imported from another agent) with
   * its own key and arguments. A settled intent returns its recorded outcome without a call.
   */
  async resume(intentId: string, options: ResumeOptions = {}): Promise<IntentOutcome> {
    const intent = this.journal.require(intentId);
    if ((intent.status === 'succeeded' || intent.status === 'failed') && intent.outcome !== undefined) {
      return intent.outcome;
    }
    if (options.args !== undefined && fingerprint(options.args) !== intent.argsHash) {
      return this.#refuseOtherAction(intent, intent.tool);
    }
    const args = intent.args ?? options.args;
    if (args === undefined && intent.operationId === undefined) {
      throw new IdemError('invalid_argument', `intent ${intentId} keeps no arguments; pass them in args`);
    }
    return this.#drive(intent, args, options);
  }

  /** Intents not settled yet, oldest first: resume each after a restart. */
  unsettled(): JournalIntent[] {
    return this.journal.unsettled();
  }

  /** Closes the connection this client opened (not a client passed in, not the journal). */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client !== undefined && this.#ownsClient) await client.close().catch(() => undefined);
  }

  async #drive(
    intent: JournalIntent,
    args: Record<string, unknown> | undefined,
    options: { signal?: AbortSignal; policy?: Partial<RetryPolicy> },
  ): Promise<IntentOutcome> {
    const run: IntentRun = {
      intent,
      policy: { ...this.#policy, ...options.policy },
      started: this.#clock.monotonic(),
      signal: options.signal,
      attempts: 0,
      operationId: intent.operationId,
      lastError: undefined,
    };
    if (args === undefined) return this.#follow(run, undefined, undefined);
    const callArgs = { ...args, [intent.keyField]: intent.key };
    for (;;) {
      const timeoutMs = attemptTimeout(run.policy, this.#elapsed(run));
      if (timeoutMs <= 0) break;
      run.attempts += 1;
      this.journal.recordAttempt(intent.intentId);
      const step = await this.#attempt(intent.tool, callArgs, timeoutMs, run.signal);
      let retryAfterMs: number | undefined;
      if (step.kind === 'failure') {
        if (step.failure.kind === 'definitive') return this.#finish(run, failed(step.failure.error));
        run.lastError = step.failure.error;
      } else {
        const verdict = replyVerdict(step.reply);
        this.#noteOperation(run, verdict.operationId);
        switch (verdict.kind) {
          case 'succeeded':
            return this.#finish(run, {
              status: 'succeeded',
              result: verdict.result,
              replayed: verdict.replayed,
            });
          case 'failed':
            return this.#finish(run, failed(verdict.error, verdict.nextAction));
          case 'unknown':
            run.lastError = verdict.error;
            return this.#finish(run, this.#unknown(run, 'server_unknown', verdict.nextAction));
          case 'follow':
            run.lastError = verdict.error;
            return this.#follow(run, verdict.state, verdict.nextAction);
          case 'retry':
            run.lastError = verdict.error;
            retryAfterMs = verdict.error.retryAfterMs;
        }
      }
      const plan = planRetry(run.policy, run.attempts, this.#elapsed(run), this.#random, retryAfterMs);
      if (!plan.retry) break;
      await this.#clock.sleep(plan.delayMs, { signal: run.signal });
    }
    // Retries are spent: an operation the server knows about may still be followed in the budget.
    if (run.operationId !== undefined && this.#elapsed(run) < run.policy.totalMs) {
      const state = run.lastError?.code === 'in_progress' ? 'running' : undefined;
      return this.#follow(run, state, undefined);
    }
    const reason = run.lastError?.code === 'in_progress' ? 'running' : 'no_reply';
    return this.#finish(run, this.#unknown(run, reason, undefined));
  }

  async #follow(
    run: IntentRun,
    state: 'accepted' | 'running' | 'outcome_unknown' | undefined,
    nextAction: string | undefined,
  ): Promise<IntentOutcome> {
    const followed = await followOperation({
      run,
      state,
      nextAction,
      operationTool: this.#operationTool,
      pollIntervalMs: this.#pollIntervalMs,
      clock: this.#clock,
      attempt: (tool, args, timeoutMs) => this.#attempt(tool, args, timeoutMs, run.signal),
    });
    if (followed.kind === 'settled') return this.#finish(run, followed.outcome);
    return this.#finish(run, this.#unknown(run, followed.reason, followed.nextAction));
  }

  /**
   * Records a new intent, durable before anything is sent: a process that dies from here on finds
   * its key again. When another process sharing the journal recorded the id first, its intent.
   */
  #begin(
    intentId: string,
    tool: string,
    args: Record<string, unknown>,
  ): { begun: boolean; intent: JournalIntent } {
    try {
      const intent = this.journal.begin({
        intentId,
        tool,
        keyField: this.#keyField,
        key: this.#newKey(),
        args,
        keepArguments: this.#keepArguments,
      });
      return { begun: true, intent };
    } catch (error) {
      const recorded = this.journal.get(intentId);
      if (error instanceof IdemError && error.code === 'payload_conflict' && recorded !== undefined) {
        return { begun: false, intent: recorded };
      }
      throw error;
    }
  }

  /**
   * `payload_conflict` for a call under an intent id that holds another action: nothing is sent and
   * the journal is left as it is (the intent keeps its own key, arguments and outcome).
   */
  #refuseOtherAction(intent: JournalIntent, tool: string): IntentOutcome {
    const id = intent.intentId;
    const outcome: IntentOutcome = {
      intentId: id,
      tool,
      key: intent.key,
      operationId: intent.operationId,
      attempts: 0,
      status: 'failed',
      error: {
        code: 'payload_conflict',
        message: `intent ${id} is recorded for another action (${intent.tool} with other arguments); nothing was sent`,
        retryable: false,
      },
      nextAction: `To continue intent ${id}, call again with its recorded tool and arguments (or resume it); for a new action, use a new intentId.`,
    };
    this.#logOutcome(outcome);
    return outcome;
  }

  #unknown(run: IntentRun, reason: UnknownReason, serverNextAction: string | undefined): OutcomeFields {
    const id = run.intent.intentId;
    const op = run.operationId;
    const resume = `Resume intent ${id} later (IdemClient.resume): it resends the same key and arguments, which cannot act twice.`;
    let nextAction: string;
    if (serverNextAction !== undefined) nextAction = serverNextAction;
    else if (reason === 'running' && op !== undefined) {
      nextAction = `Operation ${op} is still running. Call ${this.#operationTool} with operation_id ${op}, or resume intent ${id} later.`;
    } else if (reason === 'server_unknown') {
      nextAction = `The server cannot establish whether the action took effect${op === undefined ? '' : ` (operation ${op})`}; an operator must check and settle it.`;
    } else nextAction = resume;
    return { status: 'outcome_unknown', reason, nextAction, lastError: run.lastError };
  }

  #finish(run: IntentRun, fields: OutcomeFields): IntentOutcome {
    const outcome = {
      intentId: run.intent.intentId,
      tool: run.intent.tool,
      key: run.intent.key,
      operationId: run.operationId,
      attempts: run.attempts,
      ...fields,
    } as IntentOutcome;
    this.journal.recordOutcome(outcome);
    this.#logOutcome(outcome);
    return outcome;
  }

  #logOutcome(outcome: IntentOutcome): void {
    this.#logger.info('idem.client.outcome', {
      intent_id: outcome.intentId,
      tool: outcome.tool,
      status: outcome.status,
      operation_id: outcome.operationId,
      attempts: outcome.attempts,
      code:
        outcome.status === 'failed'
          ? outcome.error.code
          : outcome.status === 'outcome_unknown'
            ? outcome.reason
            : undefined,
    });
  }

  #noteOperation(run: IntentRun, operationId: string | undefined): void {
    if (operationId === undefined || run.operationId !== undefined) return;
    run.operationId = operationId;
    this.journal.recordOperationId(run.intent.intentId, operationId);
  }

  #elapsed(run: IntentRun): number {
    return this.#clock.monotonic() - run.started;
  }

  /** One tool call bounded by `timeoutMs` on this client's clock; throws only for the caller's abort. */
  #attempt(
    tool: string,
    args: Record<string, unknown>,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<AttemptResult> {
    return callWithTimeout({
      connection: (connectSignal) => this.#connection(connectSignal),
      onClosed: (client) => this.#discard(client),
      tool,
      args,
      timeoutMs,
      clock: this.#clock,
      ...(signal === undefined ? {} : { signal }),
    });
  }

  /** The current connection, or a new one (shared by concurrent calls) when it closed. */
  async #connection(signal: AbortSignal): Promise<McpClient> {
    const current = this.#client;
    if (current !== undefined && current.transport !== undefined) return current;
    if (this.#connect === undefined) throw new Error('Not connected');
    if (this.#connecting === undefined) {
      const connect = this.#connect;
      this.#connecting = connect({ signal })
        .then(async (client) => {
          await listForHeaders(client, signal);
          this.#client = client;
          return client;
        })
        .finally(() => {
          this.#connecting = undefined;
        });
    }
    return this.#connecting;
  }

  #discard(client: McpClient): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    if (this.#connect !== undefined) void client.close().catch(() => undefined);
  }
}

/**
 * At MCP 2026-07-28 the SDK client mirrors arguments marked `x-mcp-header` (Idem's
 * `idempotency_key`) into `Mcp-Param-*` headers from its cached `tools/list`: list once per
 * connection so that the first call already carries them. Without a listing a call goes out without
 * the header, is refused -32020 before any tool runs, and the SDK lists and sends it again; so a
 * listing that fails is left to that path. The 2025 revisions mirror nothing: no listing there.
 */
async function listForHeaders(client: McpClient, signal: AbortSignal): Promise<void> {
  const version = client.getNegotiatedProtocolVersion();
  if (version === undefined || version < '2026-') return;
  try {
    await client.listTools({}, { signal });
  } catch {
    signal.throwIfAborted();
  }
}

function failed(error: ToolError, nextAction?: string): OutcomeFields {
  return { status: 'failed', error, nextAction };
}
