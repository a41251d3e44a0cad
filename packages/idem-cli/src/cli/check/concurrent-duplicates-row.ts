import { show, type Observed } from './observed.js';
import type { RowContext } from './row-context.js';
import { sharedIds, succeeded, type Row } from './row.js';
import { Judgement, signed, type RowOutcome } from './verdict.js';

interface Round {
  readonly round: number;
  readonly calls: readonly Observed[];
  readonly effects: number | undefined;
  readonly judge: Judgement;
  readonly seen: string;
}

/**
 * `concurrency` calls of one action (one key, one set of arguments) at once, repeated for
 * `rounds` fresh actions: a check-then-insert race that a server loses in a share p of rounds
 * slips through all of them with probability (1-p)^rounds only. Each round must end with every
 * caller answered with one server-made id and, when counted, one action's effect; the row stops
 * at the first round that fails.
 */
export const concurrentDuplicatesRow: Row = {
  id: 'concurrent_duplicates',
  title: (ctx) => `${ctx.run.rounds} rounds of ${ctx.run.concurrency} concurrent duplicates`,
  async check(ctx) {
    const rounds: Round[] = [];
    let before = await ctx.effects();
    for (let round = 1; round <= ctx.run.rounds; round += 1) {
      const result = await oneRound(ctx, round, before);
      rounds.push(result);
      before = before === undefined || result.effects === undefined ? before : before + result.effects;
      if (result.judge.failed) break;
    }
    return summarize(ctx, rounds);
  },
};

async function oneRound(ctx: RowContext, round: number, before: number | undefined): Promise<Round> {
  const action = ctx.action();
  const calls = await Promise.all(
    Array.from({ length: ctx.run.concurrency }, () => ctx.callSettled(ctx.run.primary, action)),
  );
  const after = await ctx.effects();
  const effects = before === undefined || after === undefined ? undefined : after - before;
  const judge = new Judgement();
  const answered = calls.filter(succeeded);
  const refused = calls.filter((c) => !succeeded(c)).map(show);
  if (refused.length > 0)
    judge.fail(`${refused.length} of ${calls.length} calls failed (${[...new Set(refused)].join(', ')})`);
  const found = answered.flatMap((c) => (c.id === undefined ? [] : [c.id]));
  const shared = sharedIds(found);
  const ids = [...new Set(shared.map((id) => id.value))];
  if (found.length > 0 && found.length < answered.length) {
    judge.fail(`${answered.length - found.length} of ${answered.length} answers lack the id ${ids[0]}`);
  }
  if (ids.length > 1) judge.fail(`${ids.length} distinct ids for one action`);
  else if (ids.length === 1 && found.length === answered.length && shared.every((id) => !id.echo)) {
    judge.prove('one id');
  }
  ctx.judgeEffects(judge, effects, 1);
  if (!judge.failed && judge.result === 'inconclusive') {
    judge.miss(ctx.missingEvidence(found.some((id) => id.echo)));
  }
  const shown = ids.length === 0 ? '(no id)' : ids.length <= 2 ? ids.join(', ') : `${ids.length} ids`;
  const seen =
    `${answered.length}/${calls.length} succeeded, ${ids.length === 0 ? 'no id' : `${ids.length} distinct id${ids.length === 1 ? '' : 's'}`}` +
    (ids.length > 0 && ids.length <= 2 ? ` ${shown}` : '') +
    (effects === undefined ? '' : `, effects ${signed(effects)}`);
  return { round, calls, effects, judge, seen };
}

function summarize(ctx: RowContext, rounds: readonly Round[]): RowOutcome {
  const prefix = ctx.keyless;
  const evidence = {
    rounds: rounds.length,
    calls: ctx.run.concurrency,
    perRound: rounds.map((r) => ({
      round: r.round,
      result: r.judge.result,
      succeeded: r.calls.filter(succeeded).length,
      ids: [...new Set(r.calls.flatMap((c) => (succeeded(c) && c.id !== undefined ? [c.id.value] : [])))],
      errors: r.calls.flatMap((c) => (succeeded(c) ? [] : [c.code])),
      effects: r.effects ?? null,
    })),
  };
  const failedRound = rounds.find((r) => r.judge.failed);
  if (failedRound !== undefined) {
    return failedRound.judge.outcome(
      `round ${failedRound.round} of ${ctx.run.rounds}: ${failedRound.seen}`,
      evidence,
      prefix,
    );
  }
  const last = rounds[rounds.length - 1] as Round;
  const unproven = rounds.filter((r) => r.judge.result === 'inconclusive');
  if (unproven.length === rounds.length) {
    return last.judge.outcome(`${rounds.length} rounds, the last: ${last.seen}`, evidence, prefix);
  }
  const first = unproven[0];
  if (first !== undefined) {
    return first.judge.outcome(`round ${first.round} of ${ctx.run.rounds}: ${first.seen}`, evidence, prefix);
  }
  return {
    result: 'pass',
    summary: `${prefix}${last.judge.reason()} in each of ${rounds.length} rounds: the last ${last.seen}`,
    evidence,
  };
}
