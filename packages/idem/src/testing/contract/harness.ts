import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { Clock } from '../../core/clock.js';
import type { JsonObject } from '../../core/json.js';
import type { OperationIdentity } from '../../core/operation-identity.js';
import type { OperationRecord } from '../../core/operation-record.js';
import { receiptViewOf, type Existing } from '../../core/receipt.js';
import { newOperationId } from '../../core/ids.js';
import type { OperationState } from '../../core/operation-state.js';
import { run, step, type Steps } from '../../core/steps.js';
import {
  requestCancel,
  startAttempt,
  transition,
  type OperationPatch,
} from '../../operations/ledger-transitions.js';
import type { IdemStore } from '../../ports/idem-store.js';
import type { MaybePromise } from '../../ports/maybe-async.js';
import type { ReceiptTransaction } from '../../ports/receipt-store.js';
import { FakeClock } from '../fake-clock.js';

/** One store opened for one case, and what the suite needs to see the application's side. */
export interface ContractStore<Tx> {
  readonly store: IdemStore<Tx>;
  /**
   * Writes one application row with this id through the effect's transaction handle (synchronously
   * when the store is `synchronous`), the way a tool's effect would.
   */
  writeRow(tx: Tx, id: string): MaybePromise<void>;
  /** How many rows `writeRow` wrote that are committed. */
  countRows(): Promise<number>;
  /**
   * Another store on the same database (another connection, pool or process), for the cases that
   * race two of them. Without it those cases race on `store` itself.
   */
  connect?(): Promise<IdemStore<Tx>>;
  /** Closes the store (and whatever `connect` opened) and drops its data. */
  close(): Promise<void>;
}

/** What a store author supplies to run the suite: a fresh, empty store for each case. */
export interface StoreContractFactory<Tx> {
  readonly name: string;
  /**
   * True if the store declares `optimisticInsert` (adds the `put(record, 'absent')` cases). A case
   * checks that it matches what the store declares.
   */
  readonly optimisticInsert?: boolean;
  /** `clock` is a FakeClock: the store MUST stamp and measure with it (outbox `createdAt`, sweep pacing). */
  open(options: { readonly clock: Clock }): Promise<ContractStore<Tx>>;
}

/** One case of the suite: run it from any test framework; it throws (node:assert) when it fails. */
export interface ContractCase {
  readonly name: string;
  run(): Promise<void>;
}

export const LEASE_MS = 30_000;
export const HOUR = 60 * 60 * 1000;
export const DAY = 24 * HOUR;
export const YEAR = 365 * DAY;
export const DEPLOYMENT_ARGS: JsonObject = { service: 'api', version: '1.4.2' };

export type FinalState = 'succeeded' | 'failed' | 'cancelled' | 'outcome_unknown';
export const TERMINAL: readonly FinalState[] = ['succeeded', 'failed', 'cancelled'];
export const FINAL: readonly FinalState[] = [...TERMINAL, 'outcome_unknown'];
export const AMBIGUOUS = { code: 'outcome_unknown', message: 'the provider did not answer in time' };

/** The suite's identity of `key`, at version 1 of its operation unless `version` says otherwise. */
export function identity(key: string, version = 1): OperationIdentity {
  return { principal: 'alice', workspace: 'ws-1', operation: 'contract.deploy', version, key };
}

export function defined<T>(value: T | undefined, what: string): T {
  assert.notEqual(value, undefined, `expected ${what}, got undefined`);
  return value as T;
}

/** A deep copy without undefined-valued keys: a stored row has no "present but undefined" field. */
export function strip(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(strip);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, strip(v)]),
  );
}

/** Deep equality, where an undefined field equals an absent one. */
export function same(actual: unknown, expected: unknown, message?: string): void {
  assert.deepEqual(strip(actual), strip(expected), message);
}

/**
 * What `lookup` or `find` returned is `expected`: a tombstone field for field, a record's `ReceiptView`
 * fields (the store MAY return the rest of the record; nothing else is compared).
 */
export function sameExisting(
  actual: Existing | undefined,
  expected: Existing | undefined,
  message?: string,
): void {
  same(existingView(actual), existingView(expected), message);
}

function existingView(existing: Existing | undefined): unknown {
  return existing?.kind === 'receipt'
    ? { kind: 'receipt', receipt: receiptViewOf(existing.receipt) }
    : existing;
}

/**
 * Concurrent transaction bodies that recorded `enter N` / `exit N` ran one after another (no body
 * entered while another was inside), and exactly one of them found nothing for the identity.
 */
export function assertSerialized(events: readonly string[], found: readonly unknown[]): void {
  for (let n = 0; n < events.length; n += 2) {
    const who = events[n]?.split(' ')[1];
    same(
      [events[n], events[n + 1]],
      [`enter ${who}`, `exit ${who}`],
      `bodies interleaved: ${events.join(', ')}`,
    );
  }
  assert.equal(found.filter((e) => e === undefined).length, 1, 'exactly one body found nothing');
}

/** Every key of `expected` is deep-equal in `actual` (an undefined expectation means absent). */
export function matches(actual: unknown, expected: Record<string, unknown>, message?: string): void {
  assert.ok(typeof actual === 'object' && actual !== null, message ?? 'expected an object');
  for (const [key, value] of Object.entries(expected))
    same((actual as Record<string, unknown>)[key], value, `${message ?? ''} .${key}`.trim());
}

export async function rejectsWithCode(
  promise: Promise<unknown>,
  code: string,
  message?: string,
): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.equal((error as { code?: unknown }).code, code, message);
    return true;
  });
}

/** Lets queued callbacks and I/O run (no timer). */
export function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** An accepted durable record as an executor would write it. */
export function acceptedRecord(
  key: string,
  now: number,
  args: JsonObject = DEPLOYMENT_ARGS,
): OperationRecord {
  return {
    operationId: newOperationId(now),
    identity: identity(key),
    fingerprint: createHash('sha256').update(JSON.stringify(args)).digest('hex'),
    kind: 'durable',
    status: 'accepted',
    args,
    createdAt: now,
    updatedAt: now,
    deadlineAt: now + HOUR,
    attemptCount: 0,
    dispatched: false,
  };
}

/** A local receipt (born succeeded) as an executor would write it, at version 1 unless told. */
export function receiptRecord(key: string, now: number, retentionMs = DAY, version = 1): OperationRecord {
  const operationId = newOperationId(now);
  return {
    operationId,
    identity: identity(key, version),
    fingerprint: createHash('sha256').update(key).digest('hex'),
    kind: 'local',
    status: 'succeeded',
    resourceId: `note-${key}`,
    result: { status: 'succeeded', operation_id: operationId, resource_id: `note-${key}` },
    createdAt: now,
    updatedAt: now,
    expiresAt: now + retentionMs,
    attemptCount: 1,
    dispatched: false,
  };
}

/** How a harness makes an accepted durable operation under `key`, and answers its stored record. */
export type Accept = (key: string, args: JsonObject) => Promise<OperationRecord>;

/** One case's store, clock and the moves a worker makes, all through the port API only. */
export class Harness<Tx> {
  private constructor(
    readonly t: ContractStore<Tx>,
    readonly clock: FakeClock,
    private readonly accepts?: Accept,
  ) {}

  static async open<Tx>(factory: StoreContractFactory<Tx>): Promise<Harness<Tx>> {
    const clock = new FakeClock();
    const t = await factory.open({ clock });
    return new Harness(t, clock);
  }

  /**
   * A harness over a store already open on `clock`, whose `accept` (and so `running` and
   * `finalOp`) goes through `accept`: an executor's start, for tests of the executor beside a worker.
   */
  static over<Tx>(t: ContractStore<Tx>, clock: FakeClock, accept?: Accept): Harness<Tx> {
    return new Harness(t, clock, accept);
  }

  get store(): IdemStore<Tx> {
    return this.t.store;
  }

  get now(): number {
    return this.clock.now();
  }

  advance(ms: number): void {
    this.clock.advance(ms);
  }

  /** Another store on the same database, or this one when the factory has no `connect`. */
  another(): Promise<IdemStore<Tx>> {
    return this.t.connect === undefined ? Promise.resolve(this.t.store) : this.t.connect();
  }

  close(): Promise<void> {
    return this.t.close();
  }

  /**
   * Runs `body` in a receipt transaction of `store` for `key` (at `version`, default 1),
   * synchronously when the store is.
   */
  transact<T>(
    key: string,
    body: (tx: ReceiptTransaction<Tx>) => Steps<T>,
    store: IdemStore<Tx> = this.t.store,
    version = 1,
  ): Promise<T> {
    const synchronous = store.capabilities.synchronous;
    return store.receipts.transaction(identity(key, version), (tx) =>
      run(body(tx), synchronous, 'the contract body'),
    );
  }

  /** Writes `record` as the executor does: find, then put over what was found. */
  put(record: OperationRecord, store: IdemStore<Tx> = this.t.store): Promise<OperationRecord> {
    const synchronous = store.capabilities.synchronous;
    // In the record's own identity (principal, workspace, tool, key, version), as the executor does.
    return store.receipts.transaction(record.identity, (tx) =>
      run(
        (function* () {
          const existing = yield* step(tx.find());
          yield* step(tx.put(record, existing));
          return record;
        })(),
        synchronous,
        'the contract body',
      ),
    );
  }

  writeRow(tx: ReceiptTransaction<Tx>, id: string): Steps<void> {
    return step(this.t.writeRow(tx.handle, id));
  }

  async get(operationId: string): Promise<OperationRecord> {
    return defined(await this.store.ledger.get(operationId), `operation ${operationId}`);
  }

  accept(key = 'deploy-1', args: JsonObject = DEPLOYMENT_ARGS): Promise<OperationRecord> {
    return this.accepts?.(key, args) ?? this.put(acceptedRecord(key, this.now, args));
  }

  claim(workerId: string, leaseMs = LEASE_MS): Promise<OperationRecord | undefined> {
    return this.store.ledger.claim({ workerId, now: this.now, leaseMs });
  }

  /** Claims and checks that the claim is `operationId`. */
  async claimOp(operationId: string, workerId: string): Promise<OperationRecord> {
    const claimed = defined(await this.claim(workerId), `a claim of ${operationId} by ${workerId}`);
    assert.equal(claimed.operationId, operationId);
    return claimed;
  }

  transition(
    op: OperationRecord,
    workerId: string,
    to: OperationState,
    patch?: OperationPatch,
    from: readonly OperationState[] = [op.status],
  ): Promise<OperationRecord | undefined> {
    return transition(this.store.ledger, op.operationId, {
      workerId,
      from,
      to,
      now: this.now,
      ...(patch === undefined ? {} : { patch }),
    });
  }

  /** An accepted operation, claimed by `workerId` and moved to `running` by its first attempt. */
  async running(key = 'deploy-1', workerId = 'w1'): Promise<OperationRecord> {
    const op = await this.accept(key);
    await this.claimOp(op.operationId, workerId);
    return defined(
      await startAttempt(this.store.ledger, op.operationId, {
        workerId,
        attemptId: `att-${key}-1`,
        now: this.now,
        from: ['accepted'],
      }),
      'startAttempt',
    );
  }

  /**
   * An operation in a final state, reached by the worker `w1` the way a worker does. With
   * `release: false` the worker still holds its (unexpired) lease afterwards.
   */
  async finalOp(state: FinalState, key = `deploy-${state}`, release = true): Promise<OperationRecord> {
    const now = this.now;
    let settled: OperationRecord | undefined;
    if (state === 'succeeded') {
      const op = await this.running(key);
      settled = await this.transition(op, 'w1', 'succeeded', {
        resourceId: `dep-${key}`,
        result: { status: 'succeeded', operation_id: op.operationId, resource_id: `dep-${key}` },
        expiresAt: now + DAY,
        dispatched: false,
        releaseLease: release,
      });
    } else if (state === 'failed') {
      const op = await this.accept(key);
      await this.claimOp(op.operationId, 'w1');
      settled = await this.transition(op, 'w1', 'failed', {
        error: { code: 'invalid_argument', message: 'the provider refused the deployment' },
        expiresAt: now + DAY,
        releaseLease: release,
      });
    } else if (state === 'cancelled') {
      const op = await this.accept(key);
      await this.claimOp(op.operationId, 'w1');
      const cancelling = defined(
        await requestCancel(this.store.ledger, op.operationId, now),
        'requestCancel',
      );
      settled = await this.transition(cancelling, 'w1', 'cancelled', {
        expiresAt: now + DAY,
        releaseLease: release,
      });
    } else {
      const op = await this.running(key);
      settled = await this.transition(op, 'w1', 'outcome_unknown', {
        error: AMBIGUOUS,
        dispatched: true,
        releaseLease: release,
      });
    }
    const record = defined(settled, `a transition to ${state}`);
    assert.equal(record.status, state);
    return record;
  }
}
