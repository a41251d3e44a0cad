import { systemClock, type Clock } from '../../core/clock.js';
import type { IdemStore, StoreCapabilities } from '../../ports/idem-store.js';
import type { Housekeeping } from '../../ports/housekeeping.js';
import type { OperationsLedger } from '../../ports/operations-ledger.js';
import type { OutboxStore } from '../../ports/outbox-store.js';
import type { OperatorSessions } from '../../ports/operator-sessions.js';
import type { ReceiptStore } from '../../ports/receipt-store.js';
import type { ToolCatalog } from '../../ports/tool-catalog.js';
import { sharedSql } from './shared-sql.js';
import type { SqlDriver } from './sql-driver.js';
import { SqlHousekeeping } from './sql-housekeeping.js';
import { SqlLedger } from './sql-ledger.js';
import { SqlOperatorSessions } from './sql-operator-sessions.js';
import { SqlOutbox } from './sql-outbox.js';
import { SqlReceipts } from './sql-receipts.js';
import { SqlToolCatalog } from './sql-tool-catalog.js';

/** How a `SqlStore` is built beside its driver. */
export interface SqlStoreOptions {
  /** Time for leases, expiry and stored instants. Default `systemClock`. */
  clock?: Clock;
}

/**
 * The ports over one SQL driver: every statement and every read-modify-write written once,
 * for SQLite, PostgreSQL and the ORM integrations alike. The driver brings the dialect, the
 * connection and the transaction (the application's own); see SqlDriver.
 */
export class SqlStore<Tx> implements IdemStore<Tx> {
  readonly capabilities: StoreCapabilities;
  readonly receipts: ReceiptStore<Tx>;
  readonly ledger: OperationsLedger;
  readonly outbox: OutboxStore;
  readonly housekeeping: Housekeeping;
  readonly tools: ToolCatalog;
  readonly sessions: OperatorSessions;
  readonly #driver: SqlDriver<Tx>;

  constructor(driver: SqlDriver<Tx>, options: SqlStoreOptions = {}) {
    const clock = options.clock ?? systemClock;
    const sql = sharedSql(driver.dialect);
    const any = driver as SqlDriver<unknown>;
    this.#driver = driver;
    this.capabilities = driver.capabilities;
    this.receipts = new SqlReceipts(driver, sql, clock);
    this.ledger = new SqlLedger(any, sql, clock);
    this.outbox = new SqlOutbox(any, sql);
    this.housekeeping = new SqlHousekeeping(any, sql, clock);
    this.tools = new SqlToolCatalog(any);
    this.sessions = new SqlOperatorSessions(any);
  }

  close(): Promise<void> {
    return this.#driver.close();
  }
}

/** `new SqlStore(driver, options)`, for callers that prefer a function. */
export function sqlStore<Tx>(driver: SqlDriver<Tx>, options: SqlStoreOptions = {}): SqlStore<Tx> {
  return new SqlStore(driver, options);
}
