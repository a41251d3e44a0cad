import { systemClock } from '../../packages/idem/src/core/clock.js';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import { startAttempt, transition } from '../../packages/idem/src/operations/ledger-transitions.js';
import type { TestStore } from '../helpers/store-fixtures.js';
import { POSTGRES_URL } from '../helpers/postgres-fixtures.js';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import { openPostgres } from '../../packages/idem/src/adapters/postgres/open-postgres.js';
import { PostgresStore } from '../../packages/idem/src/adapters/postgres/postgres-store.js';

/**
 * Carries an accepted durable operation to `outcome_unknown` as the worker does when an attempt
 * may have reached a provider that cannot be asked: claimed, one attempt started, then settled
 * `outcome_unknown` (its attempt closed with that state).
 */
export async function makeOutcomeUnknown(store: IdemStore, operationId: string): Promise<OperationRecord> {
  const now = systemClock.now();
  const claimed = await store.ledger.claim({ workerId: 'w-test', now, leaseMs: 60_000 });
  if (claimed?.operationId !== operationId) throw new Error(`claimed ${claimed?.operationId ?? 'nothing'}`);
  const started = await startAttempt(store.ledger, operationId, {
    workerId: 'w-test',
    attemptId: `att-${operationId}`,
    now,
    from: ['accepted'],
  });
  if (started === undefined) throw new Error('the attempt was not started');
  const unknown = await transition(store.ledger, operationId, {
    workerId: 'w-test',
    from: ['running'],
    to: 'outcome_unknown',
    now: now + 1500,
    patch: {
      error: {
        code: 'outcome_unknown',
        message: 'the provider did not answer; the deployment may exist',
        nextAction: 'check the provider for a deployment with the provider key, then idem ops resolve',
      },
      dispatched: true,
      releaseLease: true,
    },
  });
  if (unknown === undefined) throw new Error('the outcome was not recorded');
  return unknown;
}

/** Gives up on the oldest undelivered outbox message, as the dispatcher does after its last send. */
export async function killOldestMessage(store: IdemStore): Promise<number> {
  const now = systemClock.now();
  const [claimed] = await store.outbox.claim({ workerId: 'd1', now, leaseMs: 60_000, limit: 1 });
  if (claimed === undefined) throw new Error('no outbox message');
  await store.outbox.settle(claimed.id, 'd1', { kind: 'dead', at: now, error: 'http_410' });
  return claimed.id;
}

/** The store of a database the reference server made (no test tables added). */
export async function openServerStore(
  db: { kind: 'sqlite'; path: string } | { kind: 'postgres'; schema: string },
): Promise<{ store: IdemStore; close(): Promise<void> }> {
  if (db.kind === 'sqlite') {
    const store = new SqliteStore(openSqlite(db.path));
    return { store, close: () => store.close() };
  }
  const pool = await openPostgres(POSTGRES_URL, { schema: db.schema, max: 2 });
  const store = await PostgresStore.create(pool);
  return {
    store,
    close: async () => {
      await store.close();
      await pool.end();
    },
  };
}

/** One dead letter (a webhook given up on), made through a note whose effect enqueues it. */
export async function makeDeadLetter(t: TestStore, key: string): Promise<number> {
  const operation = t.noteOperation({
    afterInsert: (context) => {
      void context.enqueue({
        destination: 'http://127.0.0.1:9/hooks',
        dedupKey: `note-created:${key}`,
        payload: { secret: 'never-shown' },
      });
    },
  });
  const run = await t.executor.run(operation, { principal: 'p', workspace: 'w', key, args: { body: 'b' } });
  if (!run.ok) throw new Error('the note was not created');
  const now = systemClock.now();
  const [claimed] = await t.store.outbox.claim({ workerId: 'd1', now, leaseMs: 60_000, limit: 1 });
  if (claimed === undefined) throw new Error('no outbox message');
  await t.store.outbox.settle(claimed.id, 'd1', { kind: 'dead', at: now, error: 'http_410' });
  return claimed.id;
}
