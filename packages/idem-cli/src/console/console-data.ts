import type { IdemStore } from 'idem';
import type { OperationRecord } from 'idem/store';
import { OPERATION_STATES } from 'idem/operations';

/** How many rows of one state the console reads at most for a count or a filtered page. */
export const SCAN_LIMIT = 1000;

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
  readonly next: string | undefined;
  /** True when the scan stopped at SCAN_LIMIT rows, so older matches may exist. */
  readonly truncated: boolean;
}

/**
 * Counts by state, each up to SCAN_LIMIT (a count that reached it is shown as "1000+"): one
 * `ledger.list` by state each.
 */
export async function countsByState(
  store: Pick<IdemStore, 'ledger'>,
): Promise<ReadonlyArray<{ state: string; count: number; capped: boolean }>> {
  const counts = [];
  for (const state of OPERATION_STATES) {
    const rows = await store.ledger.list({ status: state, limit: SCAN_LIMIT });
    counts.push({ state, count: rows.length, capped: rows.length >= SCAN_LIMIT });
  }
  return counts;
}

/** The operations in `state`, oldest first (those waiting longest come first). */
export async function oldestFirst(
  store: Pick<IdemStore, 'ledger'>,
  state: string,
  limit: number,
): Promise<OperationRecord[]> {
  const rows = await store.ledger.list({ status: state, limit: SCAN_LIMIT });
  return rows.reverse().slice(0, limit);
}

function matches(record: OperationRecord, filters: ListFilters): boolean {
  const { identity } = record;
  if (filters.operation !== undefined && identity.operation !== filters.operation) return false;
  if (filters.workspace !== undefined && identity.workspace !== filters.workspace) return false;
  if (filters.principal !== undefined && identity.principal !== filters.principal) return false;
  if (filters.from !== undefined && record.createdAt < filters.from) return false;
  if (filters.to !== undefined && record.createdAt >= filters.to) return false;
  return true;
}

/**
 * A page of operations, newest first, matching `filters`, of at most `size` rows, starting after
 * the cursor `filters.after`. Reads the newest SCAN_LIMIT operations of the state (or of all
 * states) through `ledger.list` and filters them.
 */
export async function operationsPage(
  store: Pick<IdemStore, 'ledger'>,
  filters: ListFilters,
  size: number,
): Promise<OperationsPage> {
  const scanned = await store.ledger.list({
    limit: SCAN_LIMIT,
    ...(filters.state === undefined ? {} : { status: filters.state }),
  });
  let rows = scanned.filter((r) => matches(r, filters));
  if (filters.after !== undefined) {
    const at = rows.findIndex((r) => r.operationId === filters.after);
    rows = at === -1 ? [] : rows.slice(at + 1);
  }
  const page = rows.slice(0, size);
  const next = rows.length > size ? page.at(-1)?.operationId : undefined;
  return { rows: page, next, truncated: scanned.length >= SCAN_LIMIT };
}
