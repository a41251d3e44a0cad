import { randomUUID } from 'node:crypto';
import { openSqlite } from '../adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../adapters/sqlite/sqlite-database.js';
import { systemClock, type Clock } from '../core/clock.js';
import { IdemError } from '../core/errors.js';
import { fingerprint } from '../core/fingerprint.js';
import type { IntentOutcome } from './intent-outcome.js';

/** `pending`: written, not settled (in flight, or its process died). `outcome_unknown`: gave up for now. */
export type IntentStatus = 'pending' | 'succeeded' | 'failed' | 'outcome_unknown';

/** One intended action as the journal keeps it: tool, key, arguments digest, status and outcome. */
export interface JournalIntent {
  readonly intentId: string;
  readonly tool: string;
  /** The argument that carries the key (`idempotency_key` for Idem tools). */
  readonly keyField: string;
  readonly key: string;
  /** SHA-256 of the canonical arguments without the key (the same fingerprint Idem servers use). */
  readonly argsHash: string;
  /** The arguments without the key; undefined when the journal was told not to keep them. */
  readonly args: Record<string, unknown> | undefined;
  readonly operationId: string | undefined;
  readonly status: IntentStatus;
  readonly attempts: number;
  /** The last outcome returned for it (the final one once settled). */
  readonly outcome: IntentOutcome | undefined;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** What one agent hands to another so that it can finish the same action: same key, same operation. */
export interface IntentHandoff {
  readonly format: 'idem.intent/1';
  readonly intentId: string;
  readonly tool: string;
  readonly keyField: string;
  readonly key: string;
  readonly argsHash: string;
  readonly args?: Record<string, unknown>;
  readonly operationId?: string;
}

/** What the client records before an intent's first attempt. */
export interface NewIntent {
  readonly intentId: string;
  readonly tool: string;
  readonly keyField: string;
  readonly key: string;
  readonly args: Record<string, unknown>;
  /** Keep the arguments so that a restarted process can resend them. Default true. */
  readonly keepArguments?: boolean;
}

/** An `IntentJournal`'s clock (default the system clock). */
export interface IntentJournalOptions {
  clock?: Clock;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS idem_intents (
  intent_id       TEXT PRIMARY KEY,
  tool            TEXT NOT NULL,
  key_field       TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  args_hash       TEXT NOT NULL,
  args_json       TEXT,
  operation_id    TEXT,
  status          TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'outcome_unknown')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  outcome_json    TEXT,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idem_intents_unsettled ON idem_intents (created_at)
  WHERE status IN ('pending', 'outcome_unknown');
`;

interface Row {
  intent_id: string;
  tool: string;
  key_field: string;
  idempotency_key: string;
  args_hash: string;
  args_json: string | null;
  operation_id: string | null;
  status: IntentStatus;
  attempts: number;
  outcome_json: string | null;
  created_at: number;
  updated_at: number;
}

/**
 * The agent's durable record of intended actions, in SQLite (WAL, synchronous=FULL). An intent is
 * committed BEFORE its first attempt is sent, so an agent that dies at any point finds it again with
 * its key: resending that key cannot act twice. Several processes may share one file. Methods are
 * synchronous (better-sqlite3); none of them talks to a server.
 */
export class IntentJournal {
  readonly #db: SqliteDatabase;
  readonly #clock: Clock;

  constructor(db: SqliteDatabase, options: IntentJournalOptions = {}) {
    this.#db = db;
    this.#clock = options.clock ?? systemClock;
    this.#db.exec(SCHEMA);
  }

  /** Opens (creating if needed) a journal file. */
  static open(path: string, options: IntentJournalOptions = {}): IntentJournal {
    return new IntentJournal(openSqlite(path), options);
  }

  static newIntentId(): string {
    return `intent_${randomUUID()}`;
  }

  /** Records a new intent (status `pending`, no attempt yet). An existing id is `payload_conflict`. */
  begin(intent: NewIntent): JournalIntent {
    const now = this.#clock.now();
    const argsHash = fingerprint(intent.args);
    const argsJson = intent.keepArguments === false ? null : JSON.stringify(intent.args);
    const inserted = this.#db
      .prepare(
        `INSERT INTO idem_intents (intent_id, tool, key_field, idempotency_key, args_hash, args_json, status, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (intent_id) DO NOTHING`,
      )
      .run(intent.intentId, intent.tool, intent.keyField, intent.key, argsHash, argsJson, now, now);
    if (inserted.changes === 0) {
      throw new IdemError('payload_conflict', `intent ${intent.intentId} is already in the journal`);
    }
    return this.require(intent.intentId);
  }

  get(intentId: string): JournalIntent | undefined {
    const row = this.#db.prepare('SELECT * FROM idem_intents WHERE intent_id = ?').get(intentId) as
      Row | undefined;
    return row === undefined ? undefined : fromRow(row);
  }

  require(intentId: string): JournalIntent {
    const intent = this.get(intentId);
    if (intent === undefined) throw new IdemError('not_found', `no intent ${intentId} in the journal`);
    return intent;
  }

  /** Intents not settled yet (pending or outcome_unknown), oldest first: what a restarted agent resumes. */
  unsettled(): JournalIntent[] {
    const rows = this.#db
      .prepare(
        `SELECT * FROM idem_intents WHERE status IN ('pending', 'outcome_unknown') ORDER BY created_at, intent_id`,
      )
      .all() as Row[];
    return rows.map(fromRow);
  }

  /** Every intent, newest first (at most `limit`). */
  list(options: { status?: IntentStatus; limit?: number } = {}): JournalIntent[] {
    const limit = options.limit ?? 100;
    const rows = (
      options.status === undefined
        ? this.#db.prepare('SELECT * FROM idem_intents ORDER BY created_at DESC LIMIT ?').all(limit)
        : this.#db
            .prepare('SELECT * FROM idem_intents WHERE status = ? ORDER BY created_at DESC LIMIT ?')
            .all(options.status, limit)
    ) as Row[];
    return rows.map(fromRow);
  }

  /** Counts one more attempt (written before the attempt is sent). */
  recordAttempt(intentId: string): void {
    this.#db
      .prepare('UPDATE idem_intents SET attempts = attempts + 1, updated_at = ? WHERE intent_id = ?')
      .run(this.#clock.now(), intentId);
  }

  /** Keeps the server's operation id as soon as a reply carries one (never overwritten by another). */
  recordOperationId(intentId: string, operationId: string): void {
    this.#db
      .prepare(
        'UPDATE idem_intents SET operation_id = ?, updated_at = ? WHERE intent_id = ? AND operation_id IS NULL',
      )
      .run(operationId, this.#clock.now(), intentId);
  }

  /** Stores the outcome returned to the caller; succeeded and failed settle the intent. */
  recordOutcome(outcome: IntentOutcome): void {
    this.#db
      .prepare(
        `UPDATE idem_intents SET status = ?, outcome_json = ?, operation_id = COALESCE(operation_id, ?),
         updated_at = ? WHERE intent_id = ?`,
      )
      .run(
        outcome.status,
        JSON.stringify(outcome),
        outcome.operationId ?? null,
        this.#clock.now(),
        outcome.intentId,
      );
  }

  /** Deletes an intent (e.g. a settled one the agent no longer needs). */
  remove(intentId: string): boolean {
    return this.#db.prepare('DELETE FROM idem_intents WHERE intent_id = ?').run(intentId).changes > 0;
  }

  /** A portable description of an intent for another agent (same principal) to finish it. */
  export(intentId: string): IntentHandoff {
    const intent = this.require(intentId);
    return {
      format: 'idem.intent/1',
      intentId: intent.intentId,
      tool: intent.tool,
      keyField: intent.keyField,
      key: intent.key,
      argsHash: intent.argsHash,
      ...(intent.args === undefined ? {} : { args: intent.args }),
      ...(intent.operationId === undefined ? {} : { operationId: intent.operationId }),
    };
  }

  /**
   * Takes over an exported intent as `pending`. Importing the same handoff twice is harmless; an
   * intent id already used for another key or other arguments is `payload_conflict`.
   */
  import(handoff: IntentHandoff): JournalIntent {
    checkHandoff(handoff);
    const existing = this.get(handoff.intentId);
    if (existing !== undefined) {
      if (
        existing.key !== handoff.key ||
        existing.argsHash !== handoff.argsHash ||
        existing.tool !== handoff.tool
      ) {
        throw new IdemError(
          'payload_conflict',
          `intent ${handoff.intentId} is already here with another action`,
        );
      }
      if (handoff.operationId !== undefined) this.recordOperationId(handoff.intentId, handoff.operationId);
      return this.require(handoff.intentId);
    }
    if (handoff.args !== undefined && fingerprint(handoff.args) !== handoff.argsHash) {
      throw new IdemError('invalid_argument', 'the handoff arguments do not match its argsHash');
    }
    const now = this.#clock.now();
    this.#db
      .prepare(
        `INSERT INTO idem_intents (intent_id, tool, key_field, idempotency_key, args_hash, args_json, operation_id, status, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
      )
      .run(
        handoff.intentId,
        handoff.tool,
        handoff.keyField,
        handoff.key,
        handoff.argsHash,
        handoff.args === undefined ? null : JSON.stringify(handoff.args),
        handoff.operationId ?? null,
        now,
        now,
      );
    return this.require(handoff.intentId);
  }

  close(): void {
    if (this.#db.open) this.#db.close();
  }
}

function fromRow(row: Row): JournalIntent {
  return {
    intentId: row.intent_id,
    tool: row.tool,
    keyField: row.key_field,
    key: row.idempotency_key,
    argsHash: row.args_hash,
    args: row.args_json === null ? undefined : (JSON.parse(row.args_json) as Record<string, unknown>),
    operationId: row.operation_id ?? undefined,
    status: row.status,
    attempts: row.attempts,
    outcome: row.outcome_json === null ? undefined : (JSON.parse(row.outcome_json) as IntentOutcome),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function checkHandoff(handoff: IntentHandoff): void {
  const h = handoff as unknown as Record<string, unknown>;
  const strings = ['intentId', 'tool', 'keyField', 'key', 'argsHash'];
  if (h.format !== 'idem.intent/1' || strings.some((name) => typeof h[name] !== 'string' || h[name] === '')) {
    throw new IdemError('invalid_argument', 'not an idem.intent/1 handoff');
  }
  if (h.operationId !== undefined && typeof h.operationId !== 'string') {
    throw new IdemError('invalid_argument', 'handoff operationId must be a string');
  }
  if (h.args !== undefined && (typeof h.args !== 'object' || h.args === null || Array.isArray(h.args))) {
    throw new IdemError('invalid_argument', 'handoff args must be an object');
  }
}
