import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../packages/idem/src/core/logger.js';
import { Executor, type IdempotentOperation } from '../../packages/idem/src/index.js';
import { memoryStore } from '../../packages/idem/src/testing/memory-store.js';

describe('Executor.run', () => {
  it('answers through its promise: even a call it cannot start rejects, it never throws at once', async () => {
    const executor = new Executor({ store: memoryStore(), authorize: () => true, logger: silentLogger });
    const request = { principal: 'alice', workspace: 'ws', key: 'k-1', args: {} };
    let answer: Promise<unknown> | undefined;
    expect(() => {
      answer = executor.run(
        undefined as unknown as IdempotentOperation<unknown, Record<string, never>>,
        request,
      );
    }).not.toThrow();
    await expect(answer).rejects.toBeInstanceOf(TypeError);
  });

  it('keeps a receipt for the operation’s retention, read when the receipt is written', async () => {
    const executor = new Executor({ store: memoryStore(), authorize: () => true, logger: silentLogger });
    const operation: IdempotentOperation<unknown, { body: string }> = {
      name: 'create_note',
      version: 1,
      retentionMs: 60_000,
      effect: () => ({ resource_id: 'note-1' }),
    };
    const before = Date.now();
    const outcome = await executor.run(operation, {
      principal: 'alice',
      workspace: 'ws',
      key: 'k-2',
      args: { body: 'b' },
    });
    expect(outcome.ok).toBe(true);
    const record = outcome.ok ? await executor.store.ledger.get(outcome.operationId) : undefined;
    expect(record?.expiresAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(record?.expiresAt).toBeLessThanOrEqual(Date.now() + 60_000);
  });
});
