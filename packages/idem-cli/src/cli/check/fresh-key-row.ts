import { show, showFailure } from './observed.js';
import { compareIds, type Row } from './row.js';
import { newUnique } from './unique-template.js';
import { inconclusive, Judgement, signed, skip } from './verdict.js';

/**
 * The same arguments under two fresh keys are two intended actions: two resources (distinct
 * server-made ids) or, when counted, two actions' effects. One shared id means the server keys on
 * the arguments and swallows the second action.
 */
export const freshKeyRow: Row = {
  id: 'fresh_key',
  title: () => 'fresh key, same arguments',
  async check(ctx) {
    if (ctx.plan.key === undefined) {
      return skip(
        'not run: without a key argument two equal calls cannot say whether they are one action or two',
      );
    }
    const unique = newUnique();
    const before = await ctx.effects();
    const first = await ctx.call(ctx.run.primary, ctx.action({ unique }));
    if (first.kind !== 'succeeded') {
      return inconclusive(`the first call failed (${showFailure(first)})`, { first });
    }
    const second = await ctx.call(ctx.run.primary, ctx.action({ unique }));
    const after = await ctx.effects();
    const n = before === undefined || after === undefined ? undefined : after - before;
    const judge = new Judgement();
    if (second.kind === 'error')
      judge.fail(`a new action under a fresh key was refused (${showFailure(second)})`);
    else if (second.kind === 'no_reply') judge.miss(`the second call got no reply (${second.code})`);
    else {
      const ids = compareIds(first.id, second.id).kind;
      if (ids === 'different' && first.id?.echo !== true && second.id?.echo !== true) judge.prove('two ids');
      if (ids === 'same') judge.fail(`one resource for two keys (${second.id?.value})`);
    }
    ctx.judgeEffects(judge, n, 2);
    if (!judge.failed && judge.result === 'inconclusive')
      judge.miss(ctx.missingEvidence(first.id?.echo === true));
    const seen = `${show(first)}, then ${show(second)}${n === undefined ? '' : `, effects ${signed(n)}`}`;
    return judge.outcome(seen, { first, second, effects: n ?? null });
  },
};
