import type { Row } from './row.js';
import { failed, skip } from './verdict.js';

/**
 * Present only for a tool without an idempotency key argument: the caller cannot say "this is a
 * retry", so every retry is a new action. A tool annotated idempotentHint claims that a repeat has
 * no further effect; that claim is what the lost-response and duplicate rows then test.
 */
export const keyArgumentRow: Row = {
  id: 'key_argument',
  title: () => 'idempotency key argument',
  async check(ctx) {
    if (ctx.plan.idempotentHint) {
      return skip(
        'no idempotency key argument; annotated idempotentHint (a repeat has no further effect), which the rows below test',
        { key: null, idempotentHint: true },
      );
    }
    const hints = ctx.plan.readOnlyHint
      ? 'annotated readOnlyHint, checked because --tool asked'
      : 'annotated neither readOnlyHint nor idempotentHint';
    return failed(
      `no idempotency key argument: every retry is a new action (${hints}; pass --key-field NAME if it has one)`,
      { key: null, arguments: Object.keys(ctx.plan.template) },
    );
  },
};
