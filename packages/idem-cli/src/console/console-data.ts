import type { IdemStore } from 'idem';
import type { OperationRecord } from 'idem/store';
import { OPERATION_STATES } from 'idem/operations';

/** The filters of the operations list, as the query string gives them. */
export interface ListFilters {
  readonly state?: string;
  readonly operation?: string;
  readonly workspace?: string;
  readonly principal?: string;
  /** Epoch ms: created at or after. */
  readonly from?: number;
  /** Epoch ms: created before. */
  readonly to?: number;
  /** The cursor: the operation id of the last row of the previous page. */
  readonly after?: string;
}

/** One page of the operations list: its rows, and the cursor of the next page (if any). */
export interface OperationsPage {
  readonly rows: readonly OperationRecord[];
  /** The operation id to continue after, when there is a next page. */
  readonly next: string | undefined;
}

/** The states a count is shown for: the open ones, which the partial index counts without a scan. */
const OPEN_STATES = ['outcome_unknown', 'running', 'cancel_requested', 'accepted'] as const;

/**
 * Counts of the open states (0 when none), the ledger's `countByState({ open: true })`: the final
 * states are listed, not counted (a count of a million receipts would read them all).
 */
export async function countsByState(
  store: Pick<IdemStore, 'ledger'>,
): Promise<ReadonlyArray<{ state: string; count: number | undefined }>> {
  const counts = await store.ledger.countByState({ open: true });
  return OPERATION_STATES.map((state) => ({
    state,
    count: (OPEN_STATES as readonly string[]).includes(state) ? (counts[state] ?? 0) : undefined,
  }));
}

/** The operations in `state`, oldest first (those waiting longest come first). */
export function oldestFirst(
  store: Pick<IdemStore, 'ledger'>,
  state: string,
  limit: number,
): Promise<OperationRecord[]> {
  return store.ledger.list({ status: state, order: 'oldest', limit });
}

/**
 * A page of operations, newest first (by operation id, which begins with the creation time), matching `filters`, of at most `size` rows, after the
 * cursor `filters.after`: one keyset query of the ledger (`size + 1` rows, to know whether there is
 * a next page), never an offset.
 */
export async function operationsPage(
  store: Pick<IdemStore, 'ledger'>,
  filters: ListFilters,
  size: number,
): Promise<OperationsPage> {
  const rows = await store.ledger.list({
    limit: size + 1,
    ...(filters.state === undefined ? {} : { status: filters.state }),
    ...(filters.operation === undefined ? {} : { operation: filters.operation }),
    ...(filters.workspace === undefined ? {} : { workspace: filters.workspace }),
    ...(filters.principal === undefined ? {} : { principal: filters.principal }),
    ...(filters.from === undefined ? {} : { createdFrom: filters.from }),
    ...(filters.to === undefined ? {} : { createdBefore: filters.to }),
    ...(filters.after === undefined ? {} : { after: filters.after }),
  });
  const page = rows.slice(0, size);
  const last = page.at(-1);
  return {
    rows: page,
    next: rows.length > size && last !== undefined ? last.operationId : undefined,
  };
}
