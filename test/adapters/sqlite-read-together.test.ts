import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type {
  SqliteDatabase,
  SqliteStatement,
} from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import { SqliteEngine } from '../../packages/idem/src/adapters/sqlite/sqlite-engine.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import type { OperationIdentity } from '../../packages/idem/src/core/operation-identity.js';
import { silentLogger } from '../../packages/idem/src/core/logger.js';
import { Executor, type IdempotentOperation } from '../../packages/idem/src/index.js';
import { removeTempFiles, tempFile } from '../helpers/temp-files.js';

afterEach(removeTempFiles);

/** The connection, recording each statement it runs: BEGIN, COMMIT, or the name of Idem's lookup. */
function recording(db: SqliteDatabase): { db: SqliteDatabase; ran: string[] } {
  const ran: string[] = [];
  const label = (sql: string): string => {
    const text = sql.trim();
    if (/^(BEGIN DEFERRED|COMMIT|ROLLBACK)$/.test(text)) return text;
    if (text.includes('FROM idem_tombstones')) return 'find_any';
    if (text.startsWith('SELECT fingerprint')) return 'find_own';
    return 'other';
  };
  const wrap = (statement: SqliteStatement, name: string): SqliteStatement => ({
    run: (...params) => (ran.push(name), statement.run(...params)),
    get: (...params) => (ran.push(name), statement.get(...params)),
    all: (...params) => (ran.push(name), statement.all(...params)),
    raw: (toggle) => wrap(statement.raw(toggle), name),
  });
  const proxy = new Proxy(db, {
    get(target, property) {
      if (property === 'prepare') return (sql: string) => wrap(target.prepare(sql), label(sql));
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { db: proxy, ran };
}

const createNote: IdempotentOperation<SqliteDatabase, { body: string }> = {
  name: 'create_note',
  version: 1,
  effect: (_db, args) => ({ resource_id: `note-${args.body}` }),
};

const identity = (key: string): OperationIdentity => ({
  principal: 'alice',
  workspace: 'ws',
  operation: 'create_note',
  version: 1,
  key,
});

describe('SqliteStore: the lookups of one turn share one read transaction', () => {
  it('reads a lone lookup alone, and those that come while one is under way together', async () => {
    const { db, ran } = recording(openSqlite(tempFile()));
    const store = new SqliteStore(db, { checkpoint: 'inline' });
    const executor = new Executor({ store, authorize: () => true, logger: silentLogger });
    for (const key of ['k1', 'k2', 'k3']) {
      const outcome = await executor.run(createNote, {
        principal: 'alice',
        workspace: 'ws',
        key,
        args: { body: key },
      });
      expect(outcome.ok).toBe(true);
    }
    const alone = await Promise.all(
      ['k1', 'k2', 'k3', 'absent'].map((k) => store.receipts.lookup(identity(k))),
    );

    ran.length = 0;
    expect(await store.receipts.lookup(identity('k1'))).toEqual(alone[0]);
    expect(ran).toEqual(['find_own']);

    ran.length = 0;
    const together = await Promise.all(
      ['k1', 'k2', 'k3', 'absent'].map((k) => store.receipts.lookup(identity(k))),
    );
    expect(together).toEqual(alone);
    expect(together[0]).toMatchObject({
      kind: 'receipt',
      receipt: { status: 'succeeded', resourceId: 'note-k1' },
    });
    expect(together[3]).toBeUndefined();
    // The first read at once; the three after it in one transaction (a miss also probes every version).
    expect(ran).toEqual([
      'find_own',
      'BEGIN DEFERRED',
      'find_own',
      'find_own',
      'find_own',
      'find_any',
      'COMMIT',
    ]);
    expect(db.inTransaction).toBe(false);
    await store.close();
  });

  it('sees what another connection committed before the lookups were asked', async () => {
    const path = tempFile();
    const store = new SqliteStore(openSqlite(path), { checkpoint: 'inline' });
    const other = new SqliteStore(openSqlite(path), { checkpoint: 'inline' });
    const executor = new Executor({ store: other, authorize: () => true, logger: silentLogger });
    // Keep the reading connection's snapshot warm first, then commit elsewhere, then read together.
    await Promise.all(['x', 'y'].map((k) => store.receipts.lookup(identity(k))));
    for (const key of ['x', 'y']) {
      await executor.run(createNote, { principal: 'alice', workspace: 'ws', key, args: { body: key } });
    }
    const found = await Promise.all(['x', 'y', 'x'].map((k) => store.receipts.lookup(identity(k))));
    expect(found.map((f) => f?.kind)).toEqual(['receipt', 'receipt', 'receipt']);
    await store.close();
    await other.close();
  });

  it('rolls the read transaction back when a read throws, and refuses a read that is not synchronous', async () => {
    const raw = new Database(tempFile());
    const engine = new SqliteEngine(raw, { checkpoint: 'inline' });
    const driver = engine.driver();
    const readTogether = driver.readTogether?.bind(driver);
    expect(readTogether).toBeDefined();
    if (readTogether === undefined) return;
    const failure = new Error('the body failed');
    await expect(
      readTogether((conn) => {
        conn.run({ text: 'SELECT 1' }, []);
        throw failure;
      }),
    ).rejects.toMatchObject({ code: 'internal' }); // as `read` answers any error of its body
    expect(raw.inTransaction).toBe(false);
    await expect(readTogether(async () => 1)).rejects.toMatchObject({ code: 'internal' });
    expect(raw.inTransaction).toBe(false);
    // And the connection still reads and writes.
    expect(await readTogether((conn) => conn.all<{ n: number }>({ text: 'SELECT 2 AS n' }, []))).toEqual([
      { n: 2 },
    ]);
    await engine.close();
  });
});
