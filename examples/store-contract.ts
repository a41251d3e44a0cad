import { test } from 'node:test';
import { memoryStore, storeContract, type MemoryTx, type StoreContractFactory } from 'idem/testing';

// Your store goes here; the in-memory one stands in for it. `open` makes a fresh, empty store
// per case; `writeRow` is what a tool's effect does with your transaction handle.
const factory: StoreContractFactory<MemoryTx> = {
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

for (const c of storeContract(factory)) test(c.name, () => c.run());
