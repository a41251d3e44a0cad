import pg from 'pg';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openPostgres } from '../../packages/idem/src/adapters/postgres/open-postgres.js';
import type { PgClient, PgPool } from '../../packages/idem/src/adapters/postgres/postgres-pool.js';
import { PostgresStore } from '../../packages/idem/src/adapters/postgres/postgres-store.js';
import { isIdemError } from '../../packages/idem/src/core/errors.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { ormStoreFactories } from '../helpers/orm-fixtures.js';
import { POSTGRES_URL, openPostgresTestStore, postgresAvailable } from '../helpers/postgres-fixtures.js';
import type { StoreFactory, TestStore } from '../helpers/store-fixtures.js';

// Issue 22, point 4: the lock-free reads (the replay lookup, get, list, attempts, dead letters) wait
// at most the store's lock timeout for a lock another session holds, then answer `busy`. Before the
// fix a lookup behind ACCESS EXCLUSIVE waited as long as the lock was held (2.5 s against 1 s).

const LOCK_TIMEOUT_MS = 300;
/** Generous against 300 ms: a loaded two-core machine still answers well within it. */
const ANSWER_WITHIN_MS = 3000;
/** How long the holder keeps the lock when nothing interrupts it: far past the bound. */
const HOLD_MS = 5000;

/**
 * A PostgresStore on a pool whose sessions have the same lock_timeout (openPostgres's
 * `lockTimeoutMs`, as `idem serve` opens it): its reads need no transaction of their own.
 * `statements` records what the store's clients were sent.
 */
async function sessionBoundedStore(
  options: { lockTimeoutMs?: number } = {},
  statements: string[] = [],
  sessionLockTimeoutMs = options.lockTimeoutMs,
): Promise<TestStore> {
  const base = await openPostgresTestStore(options);
  const pool: PgPool = await openPostgres(POSTGRES_URL, {
    schema: base.path,
    max: 4,
    ...(sessionLockTimeoutMs === undefined ? {} : { lockTimeoutMs: sessionLockTimeoutMs }),
  });
  const connect = pool.connect.bind(pool);
  const recorded = new WeakSet<PgClient>();
  pool.connect = async () => {
    const client = await connect();
    if (!recorded.has(client)) {
      recorded.add(client);
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<never>;
      client.query = ((...args: unknown[]) => {
        const [text] = args as [string | { text: string }];
        statements.push(typeof text === 'string' ? text : text.text);
        return query(...args);
      }) as PgClient['query'];
    }
    return client;
  };
  const store = await PostgresStore.create(pool, {
    migrate: false,
    ...(options.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: options.lockTimeoutMs }),
  });
  const executor = new Executor<PgClient>({ store, authorize: () => true });
  return {
    ...base,
    name: 'postgres, session lock_timeout',
    store: store as never,
    executor: executor as never,
    async close() {
      await store.close();
      await pool.end();
      await base.close();
    },
  };
}

const factories: StoreFactory[] = postgresAvailable
  ? [
      { name: 'postgres', create: (options) => openPostgresTestStore(options) },
      { name: 'postgres, session lock_timeout', create: (options) => sessionBoundedStore(options) },
      ...ormStoreFactories.filter((f) => f.name.endsWith(':postgres')),
    ]
  : [];

const identity = {
  principal: 'alice',
  workspace: 'ws-1',
  operation: 'create_note',
  version: 1,
  key: 'k-read',
};

/** Every read of the store, each of which must be bounded. */
const reads: Record<string, (t: TestStore, operationId: string) => Promise<unknown>> = {
  lookup: (t) => t.store.receipts.lookup(identity),
  get: (t, id) => t.store.ledger.get(id),
  list: (t) => t.store.ledger.list({ limit: 10 }),
  attempts: (t, id) => t.store.ledger.attempts(id),
  deadLetters: (t) => t.store.outbox.deadLetters({ limit: 10 }),
};

/** A session of its own that holds ACCESS EXCLUSIVE on `tables` of `schema` until released. */
async function holdLocks(schema: string, tables: readonly string[]): Promise<() => Promise<void>> {
  const holder = new pg.Client({ connectionString: POSTGRES_URL });
  await holder.connect();
  await holder.query('BEGIN');
  for (const table of tables) await holder.query(`LOCK TABLE ${schema}.${table} IN ACCESS EXCLUSIVE MODE`);
  // Ends the lock by itself if a failed assertion skips the release below.
  const timer = setTimeout(() => void holder.query('ROLLBACK').catch(() => undefined), HOLD_MS);
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    clearTimeout(timer);
    await holder.query('ROLLBACK').catch(() => undefined);
    await holder.end().catch(() => undefined);
  };
  onTestFinished(release);
  return release;
}

describe.each(factories)('reads bounded by the lock timeout ($name)', (factory) => {
  it.each(Object.keys(reads))(
    '%s answers busy within the bound behind ACCESS EXCLUSIVE, then succeeds once the lock is gone',
    async (name) => {
      const read = reads[name] as (t: TestStore, id: string) => Promise<unknown>;
      const t = await factory.create({ lockTimeoutMs: LOCK_TIMEOUT_MS });
      onTestFinished(() => t.close());
      const first = await t.executor.run(t.createNote, {
        principal: identity.principal,
        workspace: identity.workspace,
        key: identity.key,
        args: { body: 'hi' },
      });
      expect(first.ok).toBe(true);
      const operationId = first.ok ? first.operationId : '';
      const release = await holdLocks(t.path, [
        'idem_operations',
        'idem_tombstones',
        'idem_attempts',
        'idem_outbox',
      ]);

      const started = performance.now();
      const error = await read(t, operationId).then(
        () => undefined,
        (e: unknown) => e,
      );
      const tookMs = performance.now() - started;
      expect(isIdemError(error), `${name} resolved (or threw a non-IdemError) after ${tookMs} ms`).toBe(true);
      expect(error).toMatchObject({ code: 'busy', retryable: true });
      expect((error as { retryAfterMs?: number }).retryAfterMs).toBeGreaterThan(0);
      expect(tookMs).toBeGreaterThanOrEqual(LOCK_TIMEOUT_MS - 50);
      expect(tookMs).toBeLessThan(ANSWER_WITHIN_MS);

      await release();
      await expect(read(t, operationId)).resolves.toBeDefined();
      if (name === 'lookup') {
        expect(await t.store.receipts.lookup(identity)).toMatchObject({ kind: 'receipt' });
      }
    },
  );
});

describe.skipIf(!postgresAvailable)('reads on a pool whose sessions bound lock waits', () => {
  it('run as they are, without a transaction of their own; other pools get one', async () => {
    const statements: string[] = [];
    const t = await sessionBoundedStore({ lockTimeoutMs: LOCK_TIMEOUT_MS }, statements);
    onTestFinished(() => t.close());
    statements.length = 0;
    expect(await t.store.receipts.lookup(identity)).toBeUndefined();
    expect(await t.store.receipts.lookup(identity)).toBeUndefined();
    expect(statements.some((text) => text.startsWith('BEGIN'))).toBe(false);
    expect(statements.filter((text) => text.includes('idem_find('))).toHaveLength(2);

    // A session bound longer than the store's own does not count: the read bounds itself.
    const looser: string[] = [];
    const loose = await sessionBoundedStore({ lockTimeoutMs: LOCK_TIMEOUT_MS }, looser, 10_000);
    onTestFinished(() => loose.close());
    looser.length = 0;
    expect(await loose.store.receipts.lookup(identity)).toBeUndefined();
    expect(looser.some((text) => text.startsWith('BEGIN READ ONLY'))).toBe(true);
  });
});

describe.skipIf(!postgresAvailable)('writes on a pool whose sessions bound lock waits', () => {
  it('begin without a lock bound of their own only when the sessions have exactly the store’s', async () => {
    const sets = (statements: string[]) =>
      statements.filter((text) => text.includes('SET LOCAL lock_timeout'));
    const begins = (statements: string[]) => statements.filter((text) => text.startsWith('BEGIN'));
    for (const [session, own] of [
      [LOCK_TIMEOUT_MS, false],
      [LOCK_TIMEOUT_MS / 3, true],
      [10_000, true],
    ] as const) {
      const statements: string[] = [];
      const t = await sessionBoundedStore({ lockTimeoutMs: LOCK_TIMEOUT_MS }, statements, session);
      onTestFinished(() => t.close());
      statements.length = 0;
      for (const key of ['w-1', 'w-2']) {
        const outcome = await t.executor.run(t.createNote, { ...identity, key, args: { body: 'hi' } });
        expect(outcome.ok).toBe(true);
      }
      const writes = begins(statements).filter((text) => !text.startsWith('BEGIN READ ONLY'));
      expect(writes, `session lock_timeout ${session} ms`).toHaveLength(2);
      expect(sets(writes), `session lock_timeout ${session} ms`).toHaveLength(own ? 2 : 0);
      expect(writes.every((text) => text.includes('pg_try_advisory_xact_lock('))).toBe(true);
    }
  });

  it('still answer busy within the bound behind a held table lock, and write nothing', async () => {
    const t = await sessionBoundedStore({ lockTimeoutMs: LOCK_TIMEOUT_MS });
    onTestFinished(() => t.close());
    expect(
      (await t.executor.run(t.createNote, { ...identity, key: 'before', args: { body: 'hi' } })).ok,
    ).toBe(true);
    const release = await holdLocks(t.path, ['idem_operations']);
    const started = performance.now();
    const outcome = await t.executor.run(t.createNote, { ...identity, key: 'held', args: { body: 'hi' } });
    const tookMs = performance.now() - started;
    expect(outcome).toMatchObject({ ok: false, error: { code: 'busy', retryable: true } });
    expect(tookMs).toBeGreaterThanOrEqual(LOCK_TIMEOUT_MS - 50);
    expect(tookMs).toBeLessThan(ANSWER_WITHIN_MS);
    await release();
    expect(await t.countNotes()).toBe(1);
    expect(await t.countReceipts()).toBe(1);
  });
});
