import { show, showFailure } from './observed.js';
import { compareIds, type Row } from './row.js';
import { newUnique } from './unique-template.js';
import { inconclusive, Judgement, skip } from './verdict.js';

/**
 * A second principal sends the first principal's key with the same arguments: it must never get
 * the first principal's result (a replay, or the same server-made id). A refusal or an id of its
 * own is the evidence.
 */
export const crossPrincipalRow: Row = {
  id: 'cross_principal',
  title: () => 'another principal, same key',
  async check(ctx) {
    const other = ctx.run.second;
    if (other === undefined) return skip('no second token (--token2)');
    if (ctx.plan.key === undefined) return skip('not run: no idempotency key argument to share');
    const key = ctx.newKey();
    const unique = newUnique();
    const first = await ctx.call(ctx.run.primary, ctx.action({ key, unique }));
    if (first.kind !== 'succeeded') {
      return inconclusive(`the first principal's call failed (${showFailure(first)})`, { first });
    }
    const theirs = await ctx.call(other, ctx.action({ key, unique, template: ctx.plan.secondTemplate }));
    const judge = new Judgement();
    if (theirs.kind === 'error') judge.prove(`refused (${theirs.code})`);
    else if (theirs.kind === 'no_reply')
      judge.miss(`the other principal's call got no reply (${theirs.code})`);
    else if (theirs.replayed) judge.fail("the other principal got a replay of the first principal's result");
    else {
      const ids = compareIds(first.id, theirs.id).kind;
      if (ids === 'same')
        judge.fail(`the other principal got the first principal's result (${theirs.id?.value})`);
      else if (ids === 'different' && first.id?.echo !== true && theirs.id?.echo !== true)
        judge.prove('an id of its own');
      else judge.miss(ctx.missingEvidence(first.id?.echo === true).split(';')[0] as string);
    }
    return judge.outcome(`first ${show(first)}, other principal ${show(theirs)}`, { first, other: theirs });
  },
};
