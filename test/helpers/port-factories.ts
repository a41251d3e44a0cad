import type { PgClient } from '../../packages/idem/src/adapters/postgres/postgres-pool.js';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import {
  memoryStore,
  storeContract,
  type ContractCase,
  type MemoryTx,
  type StoreContractFactory,
} from '../../packages/idem/src/testing/index.js';
import { ormStoreFactories, ormWriteRow } from './orm-fixtures.js';
import { openPostgresTestStore, postgresAvailable } from './postgres-fixtures.js';
import {
  nodeSqliteAvailable,
  onlyChosenStores,
  openTestStore,
  type TestStore,
  type TestStoreOptions,
} from './store-fixtures.js';

/** The memory store as the contract suite opens it: application rows in a `rows` table. */
export const memoryFactory: StoreContractFactory<MemoryTx> = {
  name: 'memory',
  async open({ clock }) {
    const store = memoryStore({ clock });
    return {
      store,
      writeRow: (tx, id) => tx.put('rows', id, { id }),
      countRows: async () => store.data.list('rows').length,
      close: () => store.close(),
    };
  },
};

/**
 * A store from store-fixtures as the suite opens it: application rows in its `notes` table,
 * `connect()` opening another connection to the same database; `close()` closes them all.
 */
function testStoreFactory<Tx>(
  name: string,
  create: (options: TestStoreOptions) => Promise<TestStore>,
  writeRow: (tx: Tx, id: string) => void | Promise<void>,
): StoreContractFactory<Tx> {
  return {
    name,
    optimisticInsert: name.endsWith('postgres'),
    async open({ clock }) {
      const first = await create({ clock });
      const opened = [first];
      return {
        store: first.store as IdemStore<Tx>,
        writeRow,
        countRows: () => first.countNotes(),
        async connect() {
          const other = await create({ clock, path: first.path });
          opened.push(other);
          return other.store as IdemStore<Tx>;
        },
        async close() {
          for (const t of opened.reverse()) await t.close();
        },
      };
    },
  };
}

export const sqliteFactory = testStoreFactory<SqliteDatabase>(
  'sqlite',
  async (options) => openTestStore(options),
  (db, id) => {
    db.prepare('INSERT INTO notes (note_id, workspace, body) VALUES (?, ?, ?)').run(id, 'ws-1', 'contract');
  },
);

/** The same store on Node's built-in SQLite (Node 22.16 or later), the effect writing through it. */
export const nodeSqliteFactory = testStoreFactory<SqliteDatabase>(
  'node-sqlite',
  async (options) => openTestStore(options, 'node:sqlite'),
  (db, id) => {
    db.prepare('INSERT INTO notes (note_id, workspace, body) VALUES (?, ?, ?)').run(id, 'ws-1', 'contract');
  },
);

export const postgresFactory = testStoreFactory<PgClient>(
  'postgres',
  openPostgresTestStore,
  async (client, id) => {
    await client.query('INSERT INTO notes (note_id, workspace, body) VALUES ($1, $2, $3)', [
      id,
      'ws-1',
      'contract',
    ]);
  },
);

/** A factory with its type parameter erased, so that stores with different `Tx` share one list. */
export interface PortSuite {
  readonly name: string;
  cases(): ContractCase[];
}

export function portSuite<Tx>(factory: StoreContractFactory<Tx>): PortSuite {
  return { name: factory.name, cases: () => storeContract(factory) };
}

/**
 * Every store the port contract suite (test/contract/port-contract.test.ts) runs against. Add one
 * line per store: `portSuite(sqliteFactory)`, PostgreSQL, each ORM integration.
 */
export const portSuites: readonly PortSuite[] = onlyChosenStores([
  portSuite(memoryFactory),
  portSuite(sqliteFactory),
  ...(nodeSqliteAvailable ? [portSuite(nodeSqliteFactory)] : []),
  ...(postgresAvailable ? [portSuite(postgresFactory)] : []),
  // The ORM integrations (Kysely, Drizzle, Prisma), each writing its row through the ORM's `tx`.
  ...ormStoreFactories.map((f) =>
    portSuite(
      testStoreFactory<never>(f.name, f.create, ormWriteRow[f.name] as (tx: never, id: string) => void),
    ),
  ),
]);
