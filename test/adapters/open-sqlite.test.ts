import { afterEach, describe, expect, it } from 'vitest';
import {
  openSqlite,
  SqliteStore,
  SQLITE_SCHEMA_VERSION,
} from '../../packages/idem/src/adapters/sqlite/index.js';
import { Executor } from '../../packages/idem/src/index.js';
import { removeTempFiles, tempFile } from '../helpers/temp-files.js';

const path = (): string => tempFile();
afterEach(removeTempFiles);

describe('openSqlite', () => {
  it('opens in WAL mode with a 32 MiB page cache by default, or the one asked for', () => {
    const db = openSqlite(path());
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('cache_size', { simple: true })).toBe(-32 * 1024);
    db.close();
    const small = openSqlite(path(), { cacheMiB: 4 });
    expect(small.pragma('cache_size', { simple: true })).toBe(-4 * 1024);
    small.close();
  });

  it('brings a file to the latest schema: no created_at index on receipts', async () => {
    const db = openSqlite(path());
    const store = new SqliteStore(db);
    expect(db.pragma('user_version', { simple: true })).toBe(SQLITE_SCHEMA_VERSION);
    const indexes = (
      db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'idem_operations'")
        .all() as { name: string }[]
    ).map((r) => r.name);
    expect(indexes).not.toContain('idem_operations_created_at');
    expect(indexes).toContain('idem_operations_expires_at');
    await store.close();
  });

  it('migrates a version 1 file in place: the index goes, the receipts stay', async () => {
    const file = path();
    const first = new SqliteStore(openSqlite(file));
    const executor = new Executor({ store: first, authorize: () => true });
    const op = { name: 'noop', version: 1, effect: () => ({ resource_id: 'r1' }) };
    const outcome = await executor.run(op, { principal: 'p', workspace: 'w', key: 'k1', args: {} });
    expect(outcome.ok).toBe(true);
    await first.close();
    // What a version 1 file looks like.
    const raw = openSqlite(file);
    raw.exec('CREATE INDEX idem_operations_created_at ON idem_operations (created_at)');
    raw.pragma('user_version = 1');
    raw.close();

    const db = openSqlite(file);
    const store = new SqliteStore(db);
    expect(db.pragma('user_version', { simple: true })).toBe(SQLITE_SCHEMA_VERSION);
    expect(
      db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'idem_operations_created_at'").get(),
    ).toEqual({ n: 0 });
    const replay = await new Executor({ store, authorize: () => true }).run(op, {
      principal: 'p',
      workspace: 'w',
      key: 'k1',
      args: {},
    });
    expect(replay.ok && replay.replayed).toBe(true);
    await store.close();
  });
});
