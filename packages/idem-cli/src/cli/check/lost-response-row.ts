import { timeoutSignal } from 'idem';
import { readToolReply } from 'idem/client';
import type { FaultEvent } from 'idem/testing';
import { observeReply, show, showFailure, type Observed } from './observed.js';
import { compareIds, type Row } from './row.js';
import { inconclusive, Judgement, signed } from './verdict.js';

/**
 * The response to a first call is dropped on the wire (the server acted and answered); the same
 * action is sent again. Passes when the retry gets the first result (the same server-made id) and,
 * when counted, the effects moved by one action; fails on a second resource, a refused retry, an
 * answer without the first result, or the effect of two actions.
 */
export const lostResponseRow: Row = {
  id: 'lost_response',
  title: () => 'lost response, then retry',
  async check(ctx) {
    const { primary } = ctx.run;
    const before = await ctx.effects();
    const action = ctx.action();
    const controller = new AbortController();
    let dropped: FaultEvent | undefined;
    const stop = primary.watchFaults((event) => {
      dropped = event;
      controller.abort(new Error('response dropped'));
    });
    primary.faults.inject({ fault: 'drop_response', tool: ctx.plan.name });
    let unanswered: Observed | undefined;
    // Ends the first call once its response was dropped, or with the run; no timeout of its own.
    const call = timeoutSignal(Number.POSITIVE_INFINITY, { signal: [controller.signal, ctx.run.signal] });
    try {
      unanswered = await ctx.call(primary, action, call.signal);
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    } finally {
      call.dispose();
      stop();
      primary.faults.clear();
    }
    const prefix = ctx.keyless;
    if (dropped === undefined) {
      const seen = unanswered === undefined ? 'nothing' : show(unanswered);
      return inconclusive(`${prefix}the first call got no response to drop (${seen})`, {
        first: unanswered ?? null,
      });
    }
    const message = dropped.response as { result?: unknown; error?: { message?: unknown } } | undefined;
    const first: Observed =
      message?.result === undefined
        ? { kind: 'error', code: 'jsonrpc_error', message: String(message?.error?.message ?? 'no result') }
        : observeReply(readToolReply(message.result), ctx.ids(action));
    if (first.kind !== 'succeeded') {
      return inconclusive(`${prefix}the first call failed (${showFailure(first)}): nothing to retry`, {
        dropped: first,
      });
    }
    const retry = await ctx.callSettled(primary, action);
    const after = await ctx.effects();
    const n = before === undefined || after === undefined ? undefined : after - before;
    const judge = new Judgement();
    if (retry.kind !== 'succeeded') {
      judge.fail(`the retry was refused (${showFailure(retry)}): the caller never learns the result`);
    } else {
      const ids = compareIds(first.id, retry.id);
      switch (ids.kind) {
        case 'same':
          judge.prove(`the retry got the same id (${ids.at})`);
          break;
        case 'different':
          judge.fail(`the retry made a second resource (${ids.at}: ${ids.first}, then ${ids.second})`);
          break;
        case 'one':
          if (first.id !== undefined)
            judge.fail(`the retry's answer lacks the first result (${first.id.value})`);
          break;
        case 'echo':
        case 'none':
          break;
      }
    }
    ctx.judgeEffects(judge, n, 1);
    if (!judge.failed && judge.result === 'inconclusive') {
      judge.miss(ctx.missingEvidence(first.id?.echo === true));
    }
    // Shown by the field they were compared on (a durable tool's operation_id, not a later resource_id).
    const ids = retry.kind === 'succeeded' ? compareIds(first.id, retry.id) : undefined;
    const shownFirst = ids?.first ?? show(first);
    const shownRetry =
      ids?.second === undefined
        ? show(retry)
        : `${ids.second}${retry.kind === 'succeeded' && retry.replayed ? ' (replayed)' : ''}`;
    const seen = `dropped ${shownFirst}, retry ${shownRetry}${n === undefined ? '' : `, effects ${signed(n)}`}`;
    return judge.outcome(seen, { dropped: first, retry, effects: n ?? null }, prefix);
  },
};
