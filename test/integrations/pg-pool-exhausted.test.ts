import { randomUUID } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import { drizzle } from 'drizzle-orm/node-postgres';
import { sql } from 'drizzle-orm';
import { Kysely, PostgresDialect, sql as kyselySql } from 'kysely';
import pg from 'pg';
import { describe, expect, it, onTestFinished } from 'vitest';
import { PrismaClient } from '../../examples/prisma/generated/client.js';
import { PostgresStore } from '../../packages/idem/src/adapters/postgres/postgres-store.js';
import { Executor, type IdempotentOperation } from '../../packages/idem/src/executor/executor.js';
import { drizzleStore } from '../../packages/idem/src/integrations/drizzle/index.js';
import { kyselyStore } from '../../packages/idem/src/integrations/kysely/index.js';
import { prismaStore } from '../../packages/idem/src/integrations/prisma/index.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import { POSTGRES_URL, postgresAvailable } from '../helpers/postgres-fixtures.js';

// Every connection of the application's pool is in use and the pool gives up waiting
// (node-postgres `connectionTimeoutMillis`; Prisma's `maxWait` for its interactive transaction).
// No statement ran, so the call is `busy`, retryable, and nothing is written; once a connection is
// free, the same key executes once. (Before, the ORMs answered `internal`, not retryable.)

type Args = { title: string };

interface Subject {
  store: IdemStore<unknown>;
  /** The effect: one ticket row in the call's own transaction. */
  insert(tx: unknown, id: string, title: string): Promise<void>;
  /** Takes the pool's only connection; resolves with the function that gives it back. */
  hold(): Promise<() => Promise<void>>;
}

type PoolOptions = { connectionTimeoutMillis: number };

/** One connection, so that holding it leaves none; a short wait for it unless a test says otherwise. */
const poolConfig = (schema: string, options: PoolOptions = { connectionTimeoutMillis: 300 }) => ({
  connectionString: POSTGRES_URL,
  options: `-c search_path=${schema}`,
  max: 1,
  ...options,
});

/** A holder for a pg Pool: the one connection checked out until released. */
function poolHolder(pool: pg.Pool): () => Promise<() => Promise<void>> {
  return async () => {
    const client = await pool.connect();
    return async () => client.release();
  };
}

const subjects: Array<[string, (schema: string, pool?: PoolOptions) => Promise<Subject>]> = [
  [
    'pg Pool (PostgresStore)',
    async (schema, options) => {
      const pool = new pg.Pool(poolConfig(schema, options));
      onTestFinished(() => pool.end());
      const store = await PostgresStore.create(pool);
      return {
        store: store as IdemStore<unknown>,
        insert: async (tx, id, title) =>
          void (await (tx as pg.PoolClient).query('INSERT INTO tickets (id, title) VALUES ($1, $2)', [
            id,
            title,
          ])),
        hold: poolHolder(pool),
      };
    },
  ],
  [
    'kysely:postgres',
    async (schema, options) => {
      const pool = new pg.Pool(poolConfig(schema, options));
      const db = new Kysely<{ tickets: { id: string; title: string } }>({
        dialect: new PostgresDialect({ pool }),
      });
      onTestFinished(() => db.destroy());
      const store = await kyselyStore(db, { engine: 'postgres' });
      return {
        store: store as IdemStore<unknown>,
        insert: async (tx, id, title) =>
          void (await kyselySql`INSERT INTO tickets (id, title) VALUES (${id}, ${title})`.execute(
            tx as typeof db,
          )),
        hold: poolHolder(pool),
      };
    },
  ],
  [
    'drizzle:postgres',
    async (schema, options) => {
      const pool = new pg.Pool(poolConfig(schema, options));
      onTestFinished(() => pool.end());
      const db = drizzle(pool);
      const store = await drizzleStore(db);
      return {
        store: store as IdemStore<unknown>,
        insert: async (tx, id, title) =>
          void (await (tx as typeof db).execute(
            sql`INSERT INTO tickets (id, title) VALUES (${id}, ${title})`,
          )),
        hold: poolHolder(pool),
      };
    },
  ],
  [
    'prisma:postgres',
    async (schema, options) => {
      const prisma = new PrismaClient({
        adapter: new PrismaPg(poolConfig(schema, options), { schema }),
      });
      onTestFinished(() => prisma.$disconnect());
      const store = await prismaStore(prisma);
      return {
        store: store as IdemStore<unknown>,
        insert: async (tx, id, title) =>
          void (await (tx as PrismaClient).$executeRawUnsafe(
            'INSERT INTO tickets (id, title) VALUES ($1, $2)',
            id,
            title,
          )),
        hold: () => prismaHolder(prisma),
      };
    },
  ],
];

/** Holds Prisma's only pooled connection in an open interactive transaction until released. */
async function prismaHolder(prisma: PrismaClient): Promise<() => Promise<void>> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let holding!: () => void;
  const held = new Promise<void>((resolve) => (holding = resolve));
  const holder = prisma.$transaction(
    async (tx) => {
      await tx.$executeRawUnsafe('SELECT 1');
      holding();
      await released;
    },
    { timeout: 30_000 },
  );
  await held;
  return async () => {
    release();
    await holder;
  };
}

/** A schema of its own with the application's table, dropped after the test; and a row counter. */
async function freshSchema(): Promise<{ schema: string; count: (table: string) => Promise<number> }> {
  const schema = `idem_x_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  onTestFinished(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.query(`CREATE TABLE ${schema}.tickets (id TEXT PRIMARY KEY, title TEXT NOT NULL)`);
  const count = async (table: string) =>
    Number((await admin.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.${table}`)).rows[0]?.n);
  return { schema, count };
}

function ticketOperation(subject: Pick<Subject, 'insert'>): IdempotentOperation<unknown, Args> {
  return {
    name: 'create_ticket',
    version: 1,
    async effect(tx, args) {
      const id = `t_${randomUUID()}`;
      await subject.insert(tx, id, args.title);
      return { resource_id: id };
    },
  };
}

const call = { principal: 'alice', workspace: 'team-a', key: 'ticket-1', args: { title: 'Printer' } };

describe.runIf(postgresAvailable)('every pooled connection in use', () => {
  it.each(subjects)('%s: busy, retryable, nothing written; then executes once', async (_name, open) => {
    const { schema, count } = await freshSchema();
    const subject = await open(schema);
    const executor = new Executor({ store: subject.store, authorize: () => true });
    const operation = ticketOperation(subject);

    const release = await subject.hold();
    const blocked = await executor.run(operation, call);
    expect(blocked).toMatchObject({ ok: false, error: { code: 'busy', retryable: true } });
    expect(await count('tickets')).toBe(0);
    expect(await count('idem_operations')).toBe(0);

    await release();
    expect(await executor.run(operation, call)).toMatchObject({ ok: true, replayed: false });
    expect(await executor.run(operation, call)).toMatchObject({ ok: true, replayed: true });
    expect(await count('tickets')).toBe(1);
    expect(await count('idem_operations')).toBe(1);
  });

  it.each(subjects)(
    '%s: a caller that gives up while waiting for a connection gets aborted at once, nothing written',
    async (_name, open) => {
      const { schema, count } = await freshSchema();
      // The pool would wait 20 s for a connection; the caller gives up after 100 ms.
      const subject = await open(schema, { connectionTimeoutMillis: 20_000 });
      const executor = new Executor({ store: subject.store, authorize: () => true });
      const operation = ticketOperation(subject);

      const release = await subject.hold();
      const started = performance.now();
      const gaveUp = await executor.run(operation, { ...call, signal: AbortSignal.timeout(100) });
      const waitedMs = performance.now() - started;
      expect(gaveUp).toMatchObject({ ok: false, error: { code: 'aborted', retryable: true } });
      expect(waitedMs, 'not the pool wait of 20 s').toBeLessThan(10_000);

      await release();
      expect(await executor.run(operation, call)).toMatchObject({ ok: true, replayed: false });
      expect(await count('tickets')).toBe(1);
      expect(await count('idem_operations')).toBe(1);
    },
  );

  it('prisma: the interactive transaction cannot start within maxWait (P2028): busy, nothing written', async () => {
    const { schema, count } = await freshSchema();
    // No pool timeout here: Prisma's own maxWait is what gives up.
    const prisma = new PrismaClient({
      adapter: new PrismaPg(
        { connectionString: POSTGRES_URL, options: `-c search_path=${schema}`, max: 1 },
        { schema },
      ),
    });
    onTestFinished(() => prisma.$disconnect());
    // The call first looks for a receipt (in a short transaction of its own, bounded by
    // lock_timeout); the connection is taken right after that read, so that it is the call's write
    // transaction that waits.
    let armed = false;
    let release: (() => Promise<void>) | undefined;
    const reads = new Proxy(prisma, {
      get(target, property) {
        const value: unknown = Reflect.get(target, property, target);
        if (property !== '$transaction') return typeof value === 'function' ? value.bind(target) : value;
        return async (...args: Parameters<PrismaClient['$transaction']>) => {
          const result: unknown = await (target.$transaction as (...a: unknown[]) => Promise<unknown>)(
            ...args,
          );
          if (armed) {
            armed = false;
            release = await prismaHolder(target);
          }
          return result;
        };
      },
    });
    const store = await prismaStore(reads, { transaction: { maxWait: 200 } });
    const executor = new Executor({ store, authorize: () => true });
    const operation = ticketOperation({
      insert: async (tx, id, title) =>
        void (await (tx as PrismaClient).$executeRawUnsafe(
          'INSERT INTO tickets (id, title) VALUES ($1, $2)',
          id,
          title,
        )),
    });

    armed = true;
    const blocked = await executor.run(operation, call);
    expect(release, 'the connection was taken after the read').toBeDefined();
    expect(blocked).toMatchObject({ ok: false, error: { code: 'busy', retryable: true } });
    expect(await count('tickets')).toBe(0);
    expect(await count('idem_operations')).toBe(0);

    await release?.();
    expect(await executor.run(operation, call)).toMatchObject({ ok: true, replayed: false });
    expect(await count('tickets')).toBe(1);
  });
});
