import type { Housekeeping } from './housekeeping.js';
import type { OperationsLedger } from './operations-ledger.js';
import type { OperatorSessions } from './operator-sessions.js';
import type { OutboxStore } from './outbox-store.js';
import type { ReceiptCapabilities, ReceiptStore } from './receipt-store.js';
import type { ToolCatalog } from './tool-catalog.js';

/** What a store declares about itself, beside what receipts declare. */
export interface StoreCapabilities extends ReceiptCapabilities {
  /** A short name for logs and errors: `sqlite`, `postgres`, `memory`, or an integration's. */
  readonly engine: string;
  /** Several processes (server instances, workers) may share it safely. */
  readonly multiProcess: boolean;
  /** Durable: a commit survives a process crash. False only for the in-memory store. */
  readonly durable: boolean;
}

/**
 * A store: the small ports over one database, plus `close`. `Tx` is what an effect receives: the
 * application's own transaction handle (a better-sqlite3 Database, a pg PoolClient, a Kysely
 * Transaction, a Drizzle `tx`, a Prisma transaction client).
 */
export interface IdemStore<Tx = unknown> {
  readonly capabilities: StoreCapabilities;
  readonly receipts: ReceiptStore<Tx>;
  readonly ledger: OperationsLedger;
  readonly outbox: OutboxStore;
  readonly housekeeping: Housekeeping;
  /** What each tool version declares about its results (checked when an operator settles one). */
  readonly tools: ToolCatalog;
  /** The operator console's sessions, shared by every instance on the database. */
  readonly sessions: OperatorSessions;
  /** Ends what the store opened itself (a database it was handed stays the caller's to close). */
  close(): Promise<void>;
}
