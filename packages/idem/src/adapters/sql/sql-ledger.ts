import type { Clock } from '../../core/clock.js';
import { interruptedAttempt } from '../../core/operation-changes.js';
import type { AttemptRecord, OperationRecord } from '../../core/operation-record.js';
import { andThen, run, step, type Steps } from '../../core/steps.js';
import type { SignalOption } from '../../ports/maybe-async.js';
import type {
  AttemptEnd,
  ClaimOptions,
  CountOptions,
  LedgerUpdate,
  LedgerWrite,
  ListOptions,
  OperationsLedger,
  RenewOptions,
} from '../../ports/operations-ledger.js';
import { changeParams, toAttempt, toRecord, type AttemptRow, type OperationRow } from '../operation-rows.js';
import type { SharedSql } from './shared-sql.js';
import { OPERATION_STATES } from '../../core/operation-state.js';
import type { SqlConnection, SqlDriver, SqlValue } from './sql-driver.js';

/** The states the partial index `idem_operations_open` holds (migration: SQLite 6, PostgreSQL 5). */
const OPEN_STATES: ReadonlySet<string> = new Set([
  'accepted',
  'running',
  'cancel_requested',
  'outcome_unknown',
]);

/** The partial index's own WHERE, word for word: SQLite uses a partial index only for a query that repeats it. */
const OPEN_TERM = "status IN ('accepted', 'running', 'cancel_requested', 'outcome_unknown')";

/**
 * The WHERE conditions and parameters of a filtered list. A state of OPERATION_STATES is inlined
 * as a literal (it is one of a fixed set of words), so that the planner sees it when it prepares
 * the statement; an open state also gets the partial index's own term, so that both engines can
 * serve it from `idem_operations_open` (in operation id order, without a sort). Any other state is a
 * parameter.
 */
export function listFilters(options: ListOptions): { where: string[]; params: SqlValue[] } {
  const where: string[] = [];
  const params: SqlValue[] = [];
  if (options.status !== undefined) {
    if (OPEN_STATES.has(options.status)) where.push(OPEN_TERM);
    if ((OPERATION_STATES as readonly string[]).includes(options.status))
      where.push(`status = '${options.status}'`);
    else {
      where.push('status = ?');
      params.push(options.status);
    }
  }
  const exact: ReadonlyArray<[string, string | undefined]> = [
    ['operation', options.operation],
    ['workspace', options.workspace],
    ['principal', options.principal],
  ];
  for (const [column, value] of exact) {
    if (value === undefined) continue;
    where.push(`${column} = ?`);
    params.push(value);
  }
  if (options.createdFrom !== undefined) {
    where.push('created_at >= ?');
    params.push(options.createdFrom);
  }
  if (options.createdBefore !== undefined) {
    where.push('created_at < ?');
    params.push(options.createdBefore);
  }
  if (options.after !== undefined) {
    where.push(`operation_id ${options.order === 'oldest' ? '>' : '<'} ?`);
    params.push(options.after);
  }
  return { where, params };
}

/** The operations ledger over any SQL driver: the shared statements, each change in one transaction. */
export class SqlLedger implements OperationsLedger {
  readonly #driver: SqlDriver<unknown>;
  readonly #sql: SharedSql;
  readonly #sync: boolean;

  constructor(driver: SqlDriver<unknown>, sql: SharedSql, _clock: Clock) {
    this.#driver = driver;
    this.#sql = sql;
    this.#sync = driver.capabilities.synchronous;
  }

  get(operationId: string, options: SignalOption = {}): Promise<OperationRecord | undefined> {
    return this.#driver.read(
      (conn) => andThen(conn.all<OperationRow>(this.#sql.byId, [operationId]), firstRecord),
      options,
    );
  }

  list(options: ListOptions = {}): Promise<OperationRecord[]> {
    const { where, params } = listFilters(options);
    const statement = this.#sql.listWhere(where, options.order ?? 'newest');
    return this.#driver.read(
      (conn) =>
        andThen(conn.all<OperationRow>(statement, [...params, options.limit ?? 100]), (rows) =>
          rows.map(toRecord),
        ),
      options,
    );
  }

  countByState(options: CountOptions = {}): Promise<Readonly<Record<string, number>>> {
    const statement = options.open === true ? this.#sql.countOpenByState : this.#sql.countByState;
    return this.#driver.read(
      (conn) =>
        andThen(conn.all<{ status: string; n: number | string | bigint }>(statement, []), (rows) =>
          Object.fromEntries(rows.map((row) => [row.status, Number(row.n)])),
        ),
      options,
    );
  }

  attempts(operationId: string, options: SignalOption = {}): Promise<AttemptRecord[]> {
    return this.#driver.read(
      (conn) =>
        andThen(conn.all<AttemptRow>(this.#sql.attempts, [operationId]), (rows) => rows.map(toAttempt)),
      options,
    );
  }

  claim(options: ClaimOptions): Promise<OperationRecord | undefined> {
    const sql = this.#sql;
    function* claim(conn: SqlConnection): Steps<OperationRecord | undefined> {
      const rows = yield* step(
        conn.all<OperationRow>(sql.claim, [
          options.workerId,
          options.now + options.leaseMs,
          options.now,
          options.now,
        ]),
      );
      const row = rows[0];
      if (row === undefined) return undefined;
      // The previous holder stopped before recording how its attempt ended.
      const repair = interruptedAttempt(options.workerId);
      yield conn.run(sql.closeOpenAttempts, [options.now, repair.outcome, repair.detail, row.operation_id]);
      return toRecord(row);
    }
    return this.#driver.transaction((conn) => run(claim(conn), this.#sync, 'a claim'), options);
  }

  renew(operationId: string, options: RenewOptions): Promise<boolean> {
    const params = [options.leaseExpiresAt, operationId, options.workerId, options.now];
    return this.#driver.transaction(
      (conn) => andThen(conn.run(this.#sql.renew, params), (changed) => changed === 1),
      options,
    );
  }

  update(
    operationId: string,
    decide: (current: OperationRecord) => LedgerWrite | undefined,
    options: SignalOption = {},
  ): Promise<LedgerUpdate> {
    const sql = this.#sql;
    const bool = this.#driver.dialect.bool;
    function* update(conn: SqlConnection): Steps<LedgerUpdate> {
      const rows = yield* step(conn.all<OperationRow>(sql.byIdForUpdate, [operationId]));
      const current = firstRecord(rows);
      if (current === undefined) return { record: undefined, written: false };
      const write = decide(current);
      if (write === undefined) return { record: current, written: false };
      // Open attempts close before a new one opens, so a write that does both keeps the new one open.
      const close = write.closeOpenAttempts;
      if (close !== undefined)
        yield conn.run(sql.closeOpenAttempts, [close.at, close.outcome, close.detail, operationId]);
      const start = write.startAttempt;
      if (start !== undefined) {
        const number = write.change.attemptCount ?? current.attemptCount;
        yield conn.run(sql.insertAttempt, [
          start.attemptId,
          operationId,
          number,
          start.workerId,
          start.startedAt,
        ]);
      }
      const params = changeParams(current, write.change) as SqlValue[];
      params[5] = bool(params[5] === 1);
      const written = yield* step(conn.all<OperationRow>(sql.patch, params));
      return { record: firstRecord(written), written: true };
    }
    return this.#driver.transaction((conn) => run(update(conn), this.#sync, 'a ledger update'), options);
  }

  async finishAttempt(attemptId: string, end: AttemptEnd): Promise<void> {
    const params = [end.endedAt, end.outcome, end.detail ?? null, attemptId];
    await this.#driver.transaction((conn) => conn.run(this.#sql.finishAttempt, params), end);
  }
}

function firstRecord(rows: OperationRow[]): OperationRecord | undefined {
  return rows[0] === undefined ? undefined : toRecord(rows[0]);
}
