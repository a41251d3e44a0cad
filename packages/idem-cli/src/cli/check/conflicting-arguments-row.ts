import { show, showFailure } from './observed.js';
import { compareIds, type Row } from './row.js';
import { inconclusive, Judgement, signed, skip } from './verdict.js';

/**
 * A key reused with other arguments must be refused with nothing done: answering the first result
 * hides that the second request was never carried out, and acting on it makes the key mean two
 * actions. A refusal is the evidence; a counted effect must stay at zero. The second call changes
 * one argument outside the scope (`plan.other`) and repeats every other one, the scope included:
 * the same key in another workspace is another action, rightly carried out.
 */
export const conflictingArgumentsRow: Row = {
  id: 'conflicting_arguments',
  title: () => 'same key, other arguments',
  async check(ctx) {
    if (ctx.plan.key === undefined) return skip('not run: no idempotency key argument to reuse');
    const { other } = ctx.plan;
    if (other.field === undefined) return inconclusive(`not run: ${other.why}`);
    const action = ctx.action();
    const first = await ctx.call(ctx.run.primary, action);
    if (first.kind !== 'succeeded') {
      return inconclusive(`the first call failed (${showFailure(first)}): nothing to conflict with`, {
        first,
      });
    }
    const before = await ctx.effects();
    const second = await ctx.call(ctx.run.primary, ctx.otherAction(action, other));
    const after = await ctx.effects();
    const n = before === undefined || after === undefined ? undefined : after - before;
    const judge = new Judgement();
    if (second.kind === 'error') judge.prove(`refused (${second.code})`);
    else if (second.kind === 'succeeded') {
      const same = compareIds(first.id, second.id).kind;
      judge.fail(
        same === 'same'
          ? 'accepted: answered the first result for other arguments'
          : same === 'different'
            ? 'accepted as a second action under a used key'
            : 'accepted other arguments under a used key',
      );
    } else judge.miss(`the second call got no reply (${second.code})`);
    if (n !== undefined && n > 0) judge.fail(`effects ${signed(n)} where a refusal makes none`);
    else if (n !== undefined && n < 0) judge.miss(`effects ${signed(n)} where a refusal makes none`);
    const seen =
      `${other.field} changed: first ${show(first)}, then ${show(second)}` +
      (n === undefined ? '' : `, effects ${signed(n)}`);
    return judge.outcome(seen, { changed: other.field, first, second, effects: n ?? null });
  },
};
