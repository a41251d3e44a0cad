export type { MaybePromise, SignalOption } from './maybe-async.js';
export {
  ReceiptRace,
  type OutboxIntent,
  type ReceiptCapabilities,
  type ReceiptStore,
  type ReceiptTransaction,
  type ReceiptTransactionOptions,
} from './receipt-store.js';
export type {
  AttemptEnd,
  ClaimOptions,
  CountOptions,
  LedgerUpdate,
  LedgerWrite,
  ListOptions,
  OperationsLedger,
  RenewOptions,
} from './operations-ledger.js';
export type { OutboxSettlement, OutboxStore } from './outbox-store.js';
export type { Housekeeping, SweepOptions, SweepResult } from './housekeeping.js';
export type { IdemStore, StoreCapabilities } from './idem-store.js';
export type { ToolCatalog, ToolDeclaration } from './tool-catalog.js';
export type { OperatorSession, OperatorSessions } from './operator-sessions.js';
