import { randomUUID } from 'node:crypto';
import type { Tool } from '@modelcontextprotocol/client';
import {
  ERROR_CODES,
  IdemError,
  type Clock,
  type ErrorCode,
  type Executor,
  type JsonObject,
  type Logger,
  type RetryPolicy,
} from 'idem';
import { errorContent, toolResult, type FollowUpNames, type ToolCallContext } from 'idem/mcp';
import {
  providerKeyFor,
  type DispatchOutcome,
  type DurableHandler,
  type OperationRecord,
} from 'idem/operations';
import type { OperationsLedger, RecordChange } from 'idem/store';
import {
  ANSWER_PROBLEM,
  UPSTREAM_RESULT,
  answerFor,
  keptAnswer,
  outputProblem,
  type ProxyResult,
} from './kept-answer.js';
import type { ProxiedTool } from './proxy-tools.js';
import type { UpstreamConnection } from './upstream-connection.js';
import { upstreamFailure } from './upstream-failure.js';

export { UPSTREAM_RESULT, type ProxyResult } from './kept-answer.js';

type KeyedTool = Extract<ProxiedTool, { kind: 'keyed' }>;

/** What a forwarded call passes back to its caller while it runs (the upstream's progress). */
export interface CallRelay {
  /** Called with each `notifications/progress` the upstream sends for the call. */
  readonly onprogress?: (progress: { progress: number; total?: number; message?: string }) => void;
}

/** What a `Forwarder` works with. */
export interface ForwarderOptions<App> {
  readonly executor: Executor<App>;
  readonly ledger: OperationsLedger;
  readonly connection: UpstreamConnection;
  /** The keyed tool of an operation name now (the upstream's list may change on reconnect). */
  readonly toolOf: (operation: string) => KeyedTool | undefined;
  readonly clock: Clock;
  readonly logger: Logger;
  /** This proxy's lease owner name (also its worker's). */
  readonly workerId: string;
  readonly leaseMs: number;
  /** How long one forwarded call may take before its outcome is unknown. */
  readonly callTimeoutMs: number;
  /** The largest upstream answer (bytes of its JSON) kept for replay; see `keptAnswer`. */
  readonly maxAnswerBytes: number;
  readonly retentionMs: number;
  /** How long a call waits for the first call with its key before answering a status handle. */
  readonly inFlightWaitMs: number;
  /** The workspace every call acts in (the caller's credential must hold it). */
  readonly workspace: string;
  readonly names: Required<FollowUpNames>;
}

/**
 * Forwards keyed calls to the upstream once per key, using the operations ledger (the records
 * `idem ops` and the status tool see). For each call: the identity (principal, workspace, tool,
 * schema version, key) is looked up, a new key is committed `accepted` and then claimed `running`
 * with an attempt BEFORE the upstream is called (without the key); the upstream's answer, a tool
 * error included, is stored as the operation's result and replayed to every retry; other arguments
 * under a used key are `payload_conflict`; a retry while the first call runs waits within
 * `inFlightWaitMs`, then gets a status handle. An answer that never came (timeout, upstream gone,
 * proxy killed: then the lease expires and a worker finds the attempt) ends `outcome_unknown` with
 * a `next_action` naming the upstream tool and the time window, and is never forwarded again,
 * except to a tool with a declared key of its own (resent by the worker with the same key).
 */
export class Forwarder<App> {
  readonly #o: ForwarderOptions<App>;
  /** Tool versions whose result declaration is stored (or being stored), by `name@version`. */
  readonly #declared = new Map<string, Promise<boolean>>();

  constructor(options: ForwarderOptions<App>) {
    this.#o = options;
  }

  /**
   * Stores what a keyed tool's results carry (`upstream_result`, the upstream's CallToolResult)
   * before its first operation is accepted, so that `idem ops resolve --result-json` and the console
   * accept an operator's `upstream_result` in any process (resolveOperation checks the store's
   * declaration). Once per tool version; a failure is logged and tried again at the next call.
   */
  async #declare(tool: KeyedTool): Promise<void> {
    const id = `${tool.operation}@${tool.version}`;
    let done = this.#declared.get(id);
    if (done === undefined) {
      done = this.#o.executor.store.tools
        .declare({
          operation: tool.operation,
          version: tool.version,
          resultSchema: { type: 'object', properties: { [UPSTREAM_RESULT]: { type: 'object' } } },
          declaredAt: this.#o.clock.now(),
        })
        .then(
          () => true,
          (error: unknown) => {
            this.#o.logger.error('tool.declare_failed', {
              tool: tool.operation,
              version: tool.version,
              code: (error as { code?: string }).code ?? 'internal',
            });
            return false;
          },
        );
      this.#declared.set(id, done);
    }
    if (!(await done)) this.#declared.delete(id);
  }

  /** The retry policy of a keyed tool's operations (deadline and the worker's resends). */
  policy(): RetryPolicy {
    const attempt = this.#o.callTimeoutMs;
    return {
      totalMs: Math.max(30_000, 3 * attempt + 10_000),
      attemptTimeoutMs: attempt,
      maxAttempts: 3,
      baseDelayMs: 200,
      maxDelayMs: 5_000,
    };
  }

  /** One call of a keyed tool, answered as the upstream answered it (or with Idem's coded error). */
  async call(
    tool: KeyedTool,
    raw: unknown,
    context: ToolCallContext,
    relay: CallRelay = {},
  ): Promise<ProxyResult> {
    const fields = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>) : {};
    const { idempotency_key: key, ...args } = fields;
    if (context.principal === undefined)
      return idemError(new IdemError('forbidden', 'no authenticated principal'));
    await this.#declare(tool);
    const outcome = await this.#o.executor.start(
      {
        name: tool.operation,
        version: tool.version,
        retentionMs: this.#o.retentionMs,
        policy: this.policy(),
      },
      {
        principal: context.principal,
        ...(context.credentials === undefined ? {} : { credentials: context.credentials }),
        workspace: this.#o.workspace,
        key,
        args,
        ...(context.signal === undefined ? {} : { signal: context.signal }),
        ...(context.meta === undefined ? {} : { traceContext: context.meta }),
      },
    );
    if (!outcome.ok) {
      const content = errorContent(outcome.error, outcome.status, this.#o.names);
      if (outcome.replayed !== undefined) content.replayed = outcome.replayed;
      return toolResult(content, true);
    }
    const operationId = outcome.operationId;
    if (!outcome.replayed) {
      // Ours: committed `accepted`; claim it, forward it, record what came back.
      const came = await this.#forward(tool, operationId, relay);
      const record = await this.#settled(operationId, context.signal);
      // The answer as it came, even where the kept one is only the record of its size.
      if (came !== undefined && record?.status === 'succeeded') return this.#meta(came, operationId, false);
      return this.answer(tool, record, operationId, false);
    }
    const status = outcome.result.status;
    if (status === 'succeeded') return this.#unwrap(tool, outcome.result, operationId, true);
    return this.#handle(operationId, true);
  }

  /** The answer for a record: the upstream's stored result, its stored error, or a status handle. */
  answer(tool: KeyedTool, record: OperationRecord | undefined, operationId: string, replayed: boolean) {
    if (record?.status === 'succeeded' && record.result !== undefined)
      return this.#unwrap(tool, record.result, operationId, replayed);
    if (record?.error !== undefined && (record.status === 'failed' || record.status === 'outcome_unknown')) {
      const code = errorCode(record.error.code, record.status);
      const error = new IdemError(code, record.error.message, {
        operationId,
        ...(record.error.nextAction === undefined ? {} : { nextAction: record.error.nextAction }),
      });
      const content = errorContent(error, record.status, this.#o.names);
      content.replayed = replayed;
      return toolResult(content, true);
    }
    return this.#handle(operationId, replayed);
  }

  /** The upstream's own result, with Idem's fields in `_meta` (its output schema stays intact). */
  #unwrap(tool: KeyedTool, stored: JsonObject, operationId: string, replayed: boolean): ProxyResult {
    const upstream = stored[UPSTREAM_RESULT];
    const meta = { 'idem/operation_id': operationId, 'idem/replayed': replayed };
    if (typeof upstream === 'object' && upstream !== null && !Array.isArray(upstream)) {
      const problem = stored[ANSWER_PROBLEM];
      const result = answerFor(upstream as ProxyResult, typeof problem === 'string' ? problem : undefined);
      return this.#meta(result, operationId, replayed);
    }
    // Settled by an operator (`idem ops resolve --succeeded`): no upstream answer was ever kept.
    const content = { ...stored, replayed };
    return {
      content: [{ type: 'text', text: JSON.stringify(content) }],
      ...(tool.upstream.outputSchema === undefined ? { structuredContent: content } : {}),
      _meta: meta,
    };
  }

  /** The result with Idem's fields added to its `_meta`. */
  #meta(result: ProxyResult, operationId: string, replayed: boolean): ProxyResult {
    const own = typeof result._meta === 'object' && result._meta !== null ? result._meta : {};
    return { ...result, _meta: { ...own, 'idem/operation_id': operationId, 'idem/replayed': replayed } };
  }

  /** `in_progress`: the first call with this key still runs; follow it with the status tool. */
  #handle(operationId: string, replayed: boolean): ProxyResult {
    const error = new IdemError(
      'in_progress',
      'the first call with this idempotency_key is still running; it was not sent again',
      { operationId, nextStep: 'follow_operation' },
    );
    const content = errorContent(error, 'running', this.#o.names);
    content.replayed = replayed;
    return toolResult(content, true);
  }

  /** Waits within the bound for a record to reach a final state (or for the worker to finish it). */
  async #settled(operationId: string, signal?: AbortSignal): Promise<OperationRecord | undefined> {
    const { clock, ledger } = this.#o;
    const started = clock.monotonic();
    let record = await ledger.get(operationId);
    let pause = 25;
    while (record !== undefined && isActive(record) && clock.monotonic() - started < this.#o.inFlightWaitMs) {
      await clock.sleep(pause, signal === undefined ? {} : { signal });
      pause = Math.min(pause * 2, 200);
      record = await ledger.get(operationId);
    }
    return record;
  }

  /**
   * Claims an `accepted` operation (running, one attempt, `dispatched`, our lease: committed before
   * anything is sent), forwards it and records the outcome. A claim refused (a worker took it
   * first) leaves it to that worker. Returns the answer for the caller when the upstream answered
   * (as it came, even when only a bounded record of it is kept; see `answerFor`).
   */
  async #forward(tool: KeyedTool, operationId: string, relay: CallRelay): Promise<ProxyResult | undefined> {
    const { ledger, clock, workerId, leaseMs, logger } = this.#o;
    const attemptId = `att_${randomUUID().replaceAll('-', '')}`;
    const startedAt = clock.now();
    const claimed = await ledger.update(operationId, (current) => {
      const leased = current.leaseExpiresAt !== undefined && current.leaseExpiresAt > startedAt;
      if (current.status !== 'accepted' || leased) return undefined;
      return {
        change: {
          status: 'running',
          attemptCount: current.attemptCount + 1,
          dispatched: true,
          leaseOwner: workerId,
          leaseExpiresAt: startedAt + leaseMs,
          nextAttemptAt: undefined,
          updatedAt: startedAt,
        },
        startAttempt: { attemptId, workerId, startedAt },
      };
    });
    if (!claimed.written || claimed.record === undefined) return undefined;
    const lease = new AbortController();
    const renewal = setInterval(
      () => {
        const now = clock.now();
        ledger
          .renew(operationId, { workerId, now, leaseExpiresAt: now + leaseMs })
          .then((held) => {
            if (!held) lease.abort();
          })
          .catch(() => undefined);
      },
      Math.max(1, Math.floor(leaseMs / 3)),
    );
    renewal.unref();
    let outcome: DispatchOutcome;
    let came: ProxyResult | undefined;
    const t0 = clock.monotonic();
    try {
      outcome = await this.dispatch(
        tool,
        claimed.record,
        providerKeyFor(operationId),
        this.#o.callTimeoutMs,
        lease.signal,
        {
          ...relay,
          onAnswer: (answer) => {
            came = answer;
          },
        },
      );
    } finally {
      clearInterval(renewal);
    }
    logger.info('proxy.forwarded', {
      operation_id: operationId,
      tool: tool.upstream.name,
      outcome: outcome.kind,
      duration_ms: Math.round(clock.monotonic() - t0),
    });
    await this.#record(tool, claimed.record, attemptId, startedAt, outcome);
    return outcome.kind === 'created' ? came : undefined;
  }

  /** Writes what one forwarded attempt established, under our lease; anything else to the worker. */
  async #record(
    tool: KeyedTool,
    op: OperationRecord,
    attemptId: string,
    startedAt: number,
    outcome: DispatchOutcome,
  ): Promise<void> {
    const { ledger, clock, workerId } = this.#o;
    const now = clock.now();
    const release = { leaseOwner: undefined, leaseExpiresAt: undefined, updatedAt: now } as const;
    let change: RecordChange;
    let ended: string;
    let detail: string | undefined;
    if (outcome.kind === 'created') {
      change = {
        ...release,
        status: 'succeeded',
        resourceId: outcome.resourceId,
        result: {
          status: 'succeeded',
          operation_id: op.operationId,
          resource_id: outcome.resourceId,
          ...outcome.fields,
        },
        expiresAt: now + this.#o.retentionMs,
        dispatched: false,
      };
      ended = 'succeeded';
    } else if (outcome.kind === 'rejected') {
      detail = `rejected before sending: ${outcome.reason}`;
      change = {
        ...release,
        status: 'failed',
        error: { code: outcome.code, message: `${outcome.reason}; nothing was done` },
        expiresAt: now + this.#o.retentionMs,
        dispatched: false,
      };
      ended = 'failed';
    } else if (outcome.kind === 'ambiguous' && tool.upstreamKeyArg === undefined) {
      detail = `ambiguous: ${outcome.reason}`;
      change = {
        ...release,
        status: 'outcome_unknown',
        dispatched: true,
        error: {
          code: 'outcome_unknown',
          message: `the outcome of the upstream call is unknown: the request may or may not have been applied (${detail})`,
          nextAction: unknownSentence(tool.upstream.name, op.operationId, startedAt, now, this.#o.names),
        },
      };
      ended = 'ambiguous';
    } else {
      // A keyed upstream after an ambiguous attempt, or an upstream we could not reach: the
      // worker's rules decide (a resend with the same key, a backoff, or a final state).
      detail = outcome.kind === 'ambiguous' ? `ambiguous: ${outcome.reason}` : outcome.kind;
      change = { ...release, dispatched: outcome.kind === 'ambiguous' || op.dispatched };
      if (outcome.kind === 'throttled' && outcome.unsent === true) change = { ...change, dispatched: false };
      ended = outcome.kind === 'throttled' && outcome.unsent === true ? 'not_sent' : 'ambiguous';
    }
    // The attempt is closed in the same transaction as the outcome: one commit.
    const end = { outcome: ended, detail: detail ?? ended, at: now };
    const written = await ledger.update(op.operationId, (current) => {
      const holds = current.leaseOwner === workerId && (current.leaseExpiresAt ?? 0) > clock.now();
      return holds && current.status === 'running' ? { change, closeOpenAttempts: end } : undefined;
    });
    // Lease lost meanwhile: a worker decides; our account of the attempt still goes on record.
    if (!written.written) {
      await ledger.finishAttempt(attemptId, {
        endedAt: clock.now(),
        outcome: ended,
        ...(detail === undefined ? {} : { detail }),
      });
    }
  }

  /**
   * One call of the upstream tool with the operation's arguments (and the upstream's own key when
   * the tool declares one), classified: an answer (a tool error included) is `created`, kept as it
   * came within `maxAnswerBytes` (see `keptAnswer`; the proxy's client does not check it against the
   * output schema, which would turn an answer into an error); a tool whose schema changed since the
   * call was accepted, or that the upstream no longer lists, is `rejected` before anything is sent;
   * an upstream that could not be reached, or a call the SDK refused before writing it, is
   * `throttled` and `unsent`; every other failure (a JSON-RPC error from the upstream, a timeout, a
   * closed connection, an answer that is not a CallToolResult) came after the call may have reached
   * the upstream and is `ambiguous` (see `upstreamFailure`, the one place that decides).
   */
  async dispatch(
    tool: KeyedTool,
    op: OperationRecord,
    providerKey: string,
    timeoutMs: number,
    signal: AbortSignal,
    relay: CallRelay & { readonly onAnswer?: (answer: ProxyResult) => void } = {},
  ): Promise<DispatchOutcome> {
    const args: Record<string, unknown> = { ...(op.args ?? {}) };
    if (tool.upstreamKeyArg !== undefined) args[tool.upstreamKeyArg] = providerKey;
    let client;
    try {
      client = await this.#o.connection.client();
    } catch {
      return { kind: 'throttled', status: 0, unsent: true };
    }
    // The connection may be new: the upstream's schema must still be the one the key was taken for.
    const current = this.#o.toolOf(tool.operation);
    if (current === undefined || current.version !== op.identity.version)
      return {
        kind: 'rejected',
        code: 'invalid_argument',
        status: 0,
        reason:
          current === undefined
            ? `the upstream no longer lists the tool ${tool.upstream.name}`
            : `the upstream tool ${tool.upstream.name} changed its input schema since the call was accepted`,
      };
    // The lease was lost before anything was sent: the worker decides.
    if (signal.aborted) return { kind: 'throttled', status: 0, unsent: true };
    // Without the output schema the client checks nothing: the answer is the upstream's, whatever it is.
    const { outputSchema: _unchecked, ...definition } = current.upstream;
    try {
      const result = (await client.callTool(
        { name: tool.upstream.name, arguments: args },
        {
          timeout: timeoutMs,
          signal,
          toolDefinition: definition as Tool,
          ...(relay.onprogress === undefined ? {} : { onprogress: relay.onprogress }),
        },
      )) as ProxyResult;
      // To the caller that forwarded it: the answer as it came (marked when outside the schema).
      relay.onAnswer?.(answerFor(result, outputProblem(current.upstream.outputSchema, result)));
      return {
        kind: 'created',
        resourceId: op.operationId,
        fields: keptAnswer(current.upstream.outputSchema, result, this.#o.maxAnswerBytes),
      };
    } catch (error) {
      const failure = upstreamFailure(error, { timeoutMs, aborted: signal.aborted });
      this.#o.logger.warn('proxy.upstream_failure', {
        operation_id: op.operationId,
        tool: tool.upstream.name,
        kind: failure.kind,
        sent: failure.sent,
      });
      if (!failure.sent) return { kind: 'throttled', status: 0, unsent: true };
      return { kind: 'ambiguous', reason: `${failure.reason}, after the call was sent` };
    }
  }

  /**
   * The worker's handler for a keyed tool's operations: used when an accepted operation is claimed
   * by the worker (its proxy died before forwarding it, or another proxy's worker was first), and
   * when a lease expired under a forwarded call (then the attempt ends `outcome_unknown`; with a
   * declared upstream key it is resent with the same key).
   */
  handler(operation: string): DurableHandler {
    const tool = () => this.#o.toolOf(operation);
    return {
      mode: 'none',
      modeFor: () => (tool()?.upstreamKeyArg === undefined ? 'none' : 'key'),
      policy: this.policy(),
      dispatch: async (op, context) => {
        const current = tool();
        if (current === undefined)
          return {
            kind: 'rejected',
            code: 'invalid_argument',
            status: 0,
            reason: 'the upstream no longer lists this tool',
          };
        return this.dispatch(current, op, context.providerKey, context.timeoutMs, context.signal);
      },
      reconcile: () => Promise.resolve({ kind: 'unsupported' }),
      nextAction: (op, window) =>
        unknownSentence(
          tool()?.upstream.name ?? op.identity.operation,
          op.operationId,
          window.from,
          window.to,
          this.#o.names,
        ),
    };
  }
}

/** Whether an operation may still change by itself. */
function isActive(record: OperationRecord): boolean {
  return record.status === 'accepted' || record.status === 'running' || record.status === 'cancel_requested';
}

/** A stored error's code when it is one of Idem's; else the code its state implies. */
function errorCode(stored: string, status: 'failed' | 'outcome_unknown'): ErrorCode {
  if (isErrorCode(stored)) return stored;
  return status === 'outcome_unknown' ? 'outcome_unknown' : 'internal';
}

function isErrorCode(code: string): code is ErrorCode {
  return (ERROR_CODES as readonly string[]).includes(code);
}

/** Idem's own coded error for a call that never reached the ledger. */
function idemError(error: IdemError): ProxyResult {
  return toolResult(errorContent(error), true);
}

/** `next_action` of an unknown outcome: the upstream tool, the window, how to settle it. */
function unknownSentence(
  tool: string,
  operationId: string,
  from: number,
  to: number,
  names: Required<FollowUpNames>,
): string {
  const hint = names.operatorHint === '' ? '' : ` (${names.operatorHint} ${operationId})`;
  return (
    `The call to the upstream tool ${tool} was sent between ${new Date(from).toISOString()} and ` +
    `${new Date(to).toISOString()} and no answer came; it was not sent again. An operator must check ` +
    `in the upstream whether it took effect and settle operation ${operationId}${hint}; ` +
    `${names.statusTool} shows its state.`
  );
}
