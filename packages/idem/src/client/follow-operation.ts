import type { Clock } from '../core/clock.js';
import { attemptTimeout } from '../core/retry-policy.js';
import type { AttemptResult } from './call-with-timeout.js';
import type { IntentRun } from './intent-run.js';
import type { OutcomeFields, UnknownReason } from './intent-outcome.js';
import { isPlainObject, replyError, stringField } from './tool-reply.js';

export type FollowResult =
  | { readonly kind: 'settled'; readonly outcome: Extract<OutcomeFields, { status: 'succeeded' | 'failed' }> }
  | { readonly kind: 'open'; readonly reason: UnknownReason; readonly nextAction: string | undefined };

export interface FollowOptions {
  run: IntentRun;
  /** What the last reply said of the operation, if anything. */
  state: 'accepted' | 'running' | 'outcome_unknown' | undefined;
  nextAction: string | undefined;
  operationTool: string;
  pollIntervalMs: number;
  clock: Clock;
  attempt(tool: string, args: Record<string, unknown>, timeoutMs: number): Promise<AttemptResult>;
}

const UNFINISHED = new Set(['accepted', 'running', 'cancel_requested']);

/**
 * Polls the operation tool (`get_operation {operation_id}`) within what is left of the run's budget
 * until the operation is final: succeeded (its recorded result), failed or cancelled. An operation
 * still running when the budget ends leaves the outcome open. One the server reports as
 * outcome_unknown (not marked retryable) leaves it open at once, with the server's next_action: only
 * an operator settles it, so asking again would only repeat the answer. So does a server that does
 * not know the operation, or refuses to tell. Reads only: a poll never acts, so polling has no
 * attempt limit, only the deadline.
 */
export async function followOperation(options: FollowOptions): Promise<FollowResult> {
  const { run, clock } = options;
  const operationId = run.operationId;
  let state = options.state;
  let nextAction = options.nextAction;
  const open = (): FollowResult => ({
    kind: 'open',
    reason: state === 'outcome_unknown' ? 'server_unknown' : state === undefined ? 'no_reply' : 'running',
    nextAction,
  });
  if (operationId === undefined) return open();
  const elapsed = () => clock.monotonic() - run.started;
  // Right after a reply that said "not finished" there is nothing new to read yet.
  let pause = state === 'accepted' || state === 'running' ? options.pollIntervalMs : 0;
  for (;;) {
    if (pause > 0) {
      if (elapsed() + pause >= run.policy.totalMs) return open();
      await clock.sleep(pause, { signal: run.signal });
    }
    pause = options.pollIntervalMs;
    const timeoutMs = attemptTimeout(run.policy, elapsed());
    if (timeoutMs <= 0) return open();
    const step = await options.attempt(options.operationTool, { operation_id: operationId }, timeoutMs);
    if (step.kind === 'failure') {
      if (step.failure.kind === 'definitive') return open(); // e.g. the server has no such tool
      continue;
    }
    const { content, isError } = step.reply;
    if (isError) {
      const error = replyError(content);
      if (error?.retryable) continue;
      run.lastError = error ?? run.lastError;
      nextAction = stringField(content, 'next_action') ?? nextAction;
      if (error?.code === 'outcome_unknown') state = 'outcome_unknown';
      return open(); // not_found, forbidden, outcome_unknown, …: polling again will not tell more
    }
    const status = stringField(content, 'status');
    nextAction = stringField(content, 'next_action') ?? nextAction;
    if (status === 'outcome_unknown') {
      // Only an operator settles it: asking again within the budget would only repeat this answer.
      // A server that marks it retryable expects it to become known, so that one is polled on.
      state = 'outcome_unknown';
      const error = replyError(content);
      run.lastError = error ?? run.lastError;
      if (error?.retryable === true) continue;
      return open();
    }
    if (status === 'succeeded') {
      const result = isPlainObject(content.result) ? content.result : content;
      return { kind: 'settled', outcome: { status: 'succeeded', result, replayed: true } };
    }
    if (status === 'failed' || status === 'cancelled') {
      const error = replyError(content) ?? {
        code: status === 'cancelled' ? 'cancelled' : 'internal',
        message:
          status === 'cancelled' ? 'the operation was cancelled; nothing was done' : 'the operation failed',
        retryable: false,
      };
      return { kind: 'settled', outcome: { status: 'failed', error, nextAction } };
    }
    if (status !== undefined && UNFINISHED.has(status)) state = 'running';
    else return open();
  }
}
