import type { Executor, IdempotentOperation } from '../../packages/idem/src/executor/executor.js';

/** An operation that writes nothing of its own: each call leaves just its receipt. Expires after 1 s. */
export function noopOperation<App>(): IdempotentOperation<App, Record<string, never>> {
  return { name: 'noop', version: 1, retentionMs: 1000, effect: () => ({ resource_id: 'r' }) };
}

/**
 * Runs `noop` for keys `k<first>` to `k<first + count - 1>`, one call after another, as principal `p`
 * in workspace `w`; throws unless every call succeeds.
 */
export async function recordNoops<App>(executor: Executor<App>, count: number, first = 0): Promise<void> {
  const op = noopOperation<App>();
  for (let i = first; i < first + count; i += 1) {
    const outcome = await executor.run(op, { principal: 'p', workspace: 'w', key: `k${i}`, args: {} });
    if (!outcome.ok) throw new Error(`noop k${i} failed: ${outcome.error.code}: ${outcome.error.message}`);
  }
}
