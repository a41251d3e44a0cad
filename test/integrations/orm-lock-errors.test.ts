import pg from 'pg';
import { describe, expect, it, onTestFinished } from 'vitest';
import { identityLockKey } from '../../packages/idem/src/adapters/postgres/call-statements.js';
import { ormStoreFactories } from '../helpers/orm-fixtures.js';
import { POSTGRES_URL } from '../helpers/postgres-fixtures.js';

// The PostgreSQL integrations take the identity's advisory lock inside the ORM's transaction, bounded
// by lock_timeout: a call whose identity another transaction holds answers `busy` (the driver error
// translated), writes nothing, and runs once the lock is free.
const postgresOrms = ormStoreFactories.filter((f) => f.name.endsWith(':postgres'));

describe.each(postgresOrms)('the identity lock in the ORM transaction ($name)', (factory) => {
  it('answers busy, retryable, while another transaction holds the identity; then executes once', async () => {
    const t = await factory.create({ lockTimeoutMs: 100 });
    onTestFinished(() => t.close());
    const request = { principal: 'alice', workspace: 'ws-1', key: 'k-locked', args: { body: 'hi' } };
    const identity = {
      principal: 'alice',
      workspace: 'ws-1',
      operation: 'create_note',
      version: 1,
      key: 'k-locked',
    };
    const holder = new pg.Client({ connectionString: POSTGRES_URL });
    await holder.connect();
    onTestFinished(() => holder.end());
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock($1::bigint)', [identityLockKey(identity).toString()]);

    const blocked = await t.executor.run(t.createNote, request);
    expect(blocked).toMatchObject({ ok: false, error: { code: 'busy', retryable: true } });
    expect(await t.countNotes()).toBe(0);
    expect(await t.countReceipts()).toBe(0);

    await holder.query('ROLLBACK');
    expect(await t.executor.run(t.createNote, request)).toMatchObject({ ok: true, replayed: false });
    expect(await t.executor.run(t.createNote, request)).toMatchObject({ ok: true, replayed: true });
    expect(await t.countNotes()).toBe(1);
    expect(await t.countReceipts()).toBe(1);
  });
});
