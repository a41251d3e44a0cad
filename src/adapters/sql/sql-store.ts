import { systemClock, type Clock } from '../../core/clock.js';
import type { StoreCapabilities } from '../../ports/idem-store.js';
import type { IdemStore } from '../../ports/idem-store.js';
import { sharedSql } from './shared-sql.js';
import type { SqlDriver } from './sql-driver.js';
import { SqlHousekeeping } from './sql-housekeeping.js';
import { SqlLedger } from './sql-ledger.js';
import { SqlOutbox } from './sql-outbox.js';
import { SqlReceipts } from './sql-receipts.js';

export interface SqlStoreOptions {
  clock?: Clock;
}

/**
 * The four ports over one SQL driver: every statement and every read-modify-write written once,
 * for SQLite, PostgreSQL and the ORM integrations alike. The driver brings the dialect, the
 * connection and the transaction (the application's own); see SqlDriver.
 */
export function sqlStore<Tx>(driver: SqlDriver<Tx>, options: SqlStoreOptions = {}): IdemStore<Tx> {
  const clock = options.clock ?? systemClock;
  const sql = sharedSql(driver.dialect);
  const capabilities: StoreCapabilities = driver.capabilities;
  return {
    capabilities,
    receipts: new SqlReceipts(driver, sql, clock),
    ledger: new SqlLedger(driver as SqlDriver<unknown>, sql, clock),
    outbox: new SqlOutbox(driver as SqlDriver<unknown>, sql),
    housekeeping: new SqlHousekeeping(driver as SqlDriver<unknown>, sql, clock),
    close: () => driver.close(),
  };
}
