import type { FoundId } from './find-id.js';
import type { Observed } from './observed.js';
import type { RowContext } from './row-context.js';
import type { RowId, RowOutcome } from './verdict.js';

/** One contract row: a title for the table and a check that returns its verdict with evidence. */
export interface Row {
  readonly id: RowId;
  title(ctx: RowContext): string;
  check(ctx: RowContext): Promise<RowOutcome>;
}

/**
 * How the ids of two successful answers compare. Equal echoes of the arguments prove nothing
 * (equal arguments give them), so they come out as `echo`; an id in one answer only is `one`.
 */
export type IdComparison = 'same' | 'different' | 'echo' | 'one' | 'none';

/** The ids two answers have at the same place, compared there (`at`); `first`/`second` as compared. */
export interface ComparedIds {
  readonly kind: IdComparison;
  readonly at: string | undefined;
  readonly first: string | undefined;
  readonly second: string | undefined;
}

/**
 * Compares two answers' ids on the best field both have, so that a durable tool's answers compare
 * by `operation_id` even when only the later one carries a `resource_id`.
 */
export function compareIds(a: FoundId | undefined, b: FoundId | undefined): ComparedIds {
  if (a === undefined || b === undefined) {
    const kind = a === undefined && b === undefined ? 'none' : 'one';
    return { kind, at: (a ?? b)?.at, first: a?.value, second: b?.value };
  }
  const [x, y] = (sharedField([a, b]) ?? [a, b]) as [FoundId, FoundId];
  const kind = x.value !== y.value ? 'different' : x.echo || y.echo ? 'echo' : 'same';
  return { kind, at: x.at, first: x.value, second: y.value };
}

/** For answers that all have an id: their ids at the best field they all share (else their best ids). */
export function sharedIds(ids: readonly FoundId[]): ReadonlyArray<{ value: string; echo: boolean }> {
  return sharedField(ids) ?? ids;
}

function sharedField(
  ids: readonly FoundId[],
): Array<{ value: string; at: string; echo: boolean }> | undefined {
  const [head] = ids;
  if (head === undefined) return undefined;
  for (const candidate of head.candidates) {
    const row = ids.map((id) => id.candidates.find((c) => c.at === candidate.at));
    if (row.every((c) => c !== undefined)) return row as Array<{ value: string; at: string; echo: boolean }>;
  }
  return undefined;
}

export function succeeded(o: Observed): o is Extract<Observed, { kind: 'succeeded' }> {
  return o.kind === 'succeeded';
}
