import {
  memoryStore,
  storeContract,
  type ContractCase,
  type MemoryTx,
  type StoreContractFactory,
} from '../../src/testing/index.js';

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
export const portSuites: readonly PortSuite[] = [portSuite(memoryFactory)];
