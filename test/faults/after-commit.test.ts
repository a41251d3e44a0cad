import { describe, expect, it, onTestFinished } from 'vitest';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { CallOutcome } from '../../packages/idem/src/executor/executor.js';
import { openTestStore, type SqliteTestStore } from '../helpers/store-fixtures.js';

function open(): SqliteTestStore {
  const t = openTestStore();
  onTestFinished(() => t.close());
  return t;
}

function call(t: SqliteTestStore, body = 'b'): Promise<CallOutcome> {
  return t.executor.run(t.createNote, {
    principal: 'alice',
    workspace: 'ws-1',
    key: 'key-1',
    args: { body },
  });
}

describe('a failure after COMMIT', () => {
  it('returns an error, but the effect and its receipt are committed and the retry replays them', async () => {
    const t = open();
    t.faults.arm('after_commit', () => {
      throw new Error('crash after commit');
    });

    const first = await call(t);
    if (first.ok) throw new Error('expected the injected failure to surface');

    // Committed: visible to another connection, not only to the store's own.
    const other = openSqlite(t.path);
    try {
      expect((other.prepare('SELECT count(*) AS n FROM notes').get() as { n: number }).n).toBe(1);
      expect((other.prepare('SELECT count(*) AS n FROM idem_operations').get() as { n: number }).n).toBe(1);
    } finally {
      other.close();
    }
    const [receipt] = await t.store.ledger.list();
    const [note] = await t.listNotes();
    expect(receipt?.resourceId).toBe(note?.note_id);

    const retry = await call(t);
    if (!retry.ok) throw new Error(`retry failed: ${retry.error.code}`);
    expect(retry.replayed).toBe(true);
    expect(retry.operationId).toBe(receipt?.operationId);
    expect(retry.result.resource_id).toBe(note?.note_id);
    expect(await t.countNotes()).toBe(1);
    expect(await t.countReceipts()).toBe(1);
  });

  it('is reported as outcome_unknown and retryable, not as a rollback', async () => {
    const t = open();
    const injected = new Error('crash after commit');
    t.faults.arm('after_commit', () => {
      throw injected;
    });

    const first = await call(t);
    if (first.ok) throw new Error('expected the injected failure to surface');
    expect(first.error.code).toBe('outcome_unknown');
    expect(first.error.retryable).toBe(true);
    expect(first.error.cause).toBe(injected);
    expect(first.error.message).not.toMatch(/rolled back|nothing was (changed|committed)/);
  });

  it('still rejects other arguments under the key whose first call ended in an error', async () => {
    const t = open();
    t.faults.arm('after_commit', () => {
      throw new Error('crash after commit');
    });
    expect((await call(t, 'original')).ok).toBe(false);

    const conflict = await call(t, 'changed');
    if (conflict.ok) throw new Error('expected payload_conflict');
    expect(conflict.error.code).toBe('payload_conflict');
    expect(await t.countNotes()).toBe(1);
  });
});
