import { IdemError } from '../core/errors.js';

/**
 * The application's side of a memory store transaction: a tiny table API whose writes stay in the
 * transaction until it commits, so that an effect written against it can be unit-tested for "the
 * effect and the receipt commit together, or neither does". Rows are copied in and out
 * (`structuredClone`): a caller never holds the stored object.
 */
export interface MemoryTx {
  /** The row, as this transaction sees it (its own writes over committed data). */
  get<Row = unknown>(table: string, id: string): Row | undefined;
  /** Inserts or replaces a row; visible to this transaction now, to others after commit. */
  put(table: string, id: string, row: unknown): void;
  /** Deletes a row; true if there was one. */
  delete(table: string, id: string): boolean;
  /** Every row of the table as this transaction sees it, in insertion order. */
  list<Row = unknown>(table: string): Row[];
}

/** Committed application rows, read-only: what a test asserts on after a call. */
export interface MemoryReader {
  get<Row = unknown>(table: string, id: string): Row | undefined;
  list<Row = unknown>(table: string): Row[];
}

const DELETED = Symbol('deleted');
type Staged = Map<string, Map<string, unknown>>;

/** The committed tables of one memory store. */
export class MemoryTables implements MemoryReader {
  readonly #tables = new Map<string, Map<string, unknown>>();

  get<Row = unknown>(table: string, id: string): Row | undefined {
    const row = this.#tables.get(table)?.get(id);
    return row === undefined ? undefined : (structuredClone(row) as Row);
  }

  list<Row = unknown>(table: string): Row[] {
    return [...(this.#tables.get(table)?.values() ?? [])].map((row) => structuredClone(row) as Row);
  }

  /** A transaction over these tables; `commit` applies its writes, dropping it rolls them back. */
  begin(): { readonly tx: MemoryTx; commit(): void; end(): void } {
    const staged: Staged = new Map();
    let ended = false;
    const live = () => {
      if (ended) throw new IdemError('internal', 'this memory transaction has ended; keep no handle past it');
    };
    const stagedRow = (table: string, id: string): unknown => {
      const writes = staged.get(table);
      return writes?.has(id) === true ? writes.get(id) : this.#tables.get(table)?.get(id);
    };
    const stage = (table: string, id: string, row: unknown) => {
      let writes = staged.get(table);
      if (writes === undefined) staged.set(table, (writes = new Map()));
      writes.set(id, row);
    };
    const tx: MemoryTx = {
      get: <Row>(table: string, id: string) => {
        live();
        const row = stagedRow(table, id);
        return row === undefined || row === DELETED ? undefined : (structuredClone(row) as Row);
      },
      put: (table, id, row) => {
        live();
        stage(table, id, structuredClone(row));
      },
      delete: (table, id) => {
        live();
        const row = stagedRow(table, id);
        if (row === undefined || row === DELETED) return false;
        stage(table, id, DELETED);
        return true;
      },
      list: <Row>(table: string) => {
        live();
        const ids = new Set([
          ...(this.#tables.get(table)?.keys() ?? []),
          ...(staged.get(table)?.keys() ?? []),
        ]);
        const rows: Row[] = [];
        for (const id of ids) {
          const row = stagedRow(table, id);
          if (row !== undefined && row !== DELETED) rows.push(structuredClone(row) as Row);
        }
        return rows;
      },
    };
    return {
      tx,
      commit: () => {
        for (const [table, writes] of staged) {
          let rows = this.#tables.get(table);
          if (rows === undefined) this.#tables.set(table, (rows = new Map()));
          for (const [id, row] of writes) {
            if (row === DELETED) rows.delete(id);
            else rows.set(id, row);
          }
        }
      },
      end: () => {
        ended = true;
      },
    };
  }
}
