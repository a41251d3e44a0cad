import { describe, expect, it } from 'vitest';
import type { OperationIdentity } from '../../packages/idem/src/core/operation-identity.js';
import { memoryStore, type MemoryTx } from '../../packages/idem/src/testing/index.js';

const ID: OperationIdentity = { principal: 'a', workspace: 'w', operation: 'op', version: 1, key: 'k' };

describe('memoryStore', () => {
  it('declares itself not durable, single-process, asynchronous', () => {
    expect(memoryStore().capabilities).toEqual({
      engine: 'memory',
      synchronous: false,
      optimisticInsert: false,
      multiProcess: false,
      durable: false,
    });
  });

  it('MemoryTx: a transaction sees its own writes, others see them only after commit; rows are copies', async () => {
    const store = memoryStore();
    await store.receipts.transaction(ID, (tx) => tx.handle.put('notes', 'n0', { body: 'old' }));
    const row = { body: 'new' };
    await store.receipts.transaction(ID, async ({ handle }) => {
      handle.put('notes', 'n1', row);
      row.body = 'mutated after put';
      expect(handle.get('notes', 'n1')).toEqual({ body: 'new' });
      expect(handle.delete('notes', 'n0')).toBe(true);
      expect(handle.delete('notes', 'n0')).toBe(false);
      expect(handle.list('notes')).toEqual([{ body: 'new' }]);
      expect(store.data.list('notes')).toEqual([{ body: 'old' }]);
    });
    expect(store.data.list('notes')).toEqual([{ body: 'new' }]);
    expect(store.data.get('notes', 'n0')).toBeUndefined();
    const read = store.data.get<{ body: string }>('notes', 'n1');
    if (read !== undefined) read.body = 'changed by the reader';
    expect(store.data.get('notes', 'n1')).toEqual({ body: 'new' });
  });

  it('MemoryTx: a throw drops every write, and a handle kept past its transaction refuses to write', async () => {
    const store = memoryStore();
    let kept: MemoryTx | undefined;
    await expect(
      store.receipts.transaction(ID, ({ handle }) => {
        kept = handle;
        handle.put('notes', 'n1', { body: 'x' });
        throw new Error('effect failed');
      }),
    ).rejects.toThrow('effect failed');
    expect(store.data.list('notes')).toEqual([]);
    expect(() => kept?.put('notes', 'n2', {})).toThrow(expect.objectContaining({ code: 'internal' }));
  });

  it('a closed store refuses calls with unavailable', async () => {
    const store = memoryStore();
    await store.close();
    await expect(store.ledger.list()).rejects.toMatchObject({ code: 'unavailable', retryable: false });
    await expect(store.receipts.transaction(ID, () => undefined)).rejects.toMatchObject({
      code: 'unavailable',
    });
  });
});
