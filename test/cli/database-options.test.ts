import { describe, expect, it } from 'vitest';
import { databaseSpec } from '../../packages/idem-cli/src/cli/database-options.js';

const defaults = {
  'pg-pool-max': '10',
  'pg-statement-timeout': '30s',
  'pg-connect-timeout': '5s',
};

describe('databaseSpec', () => {
  it('sends named prepared statements on PostgreSQL unless --pg-no-prepared-statements', () => {
    const db = 'postgres://postgres@127.0.0.1:5432/test';
    const on = databaseSpec({ ...defaults, db });
    const off = databaseSpec({ ...defaults, db, 'pg-no-prepared-statements': true });
    expect(on.kind === 'postgres' && on.preparedStatements).toBe(true);
    expect(off.kind === 'postgres' && off.preparedStatements).toBe(false);
    expect(off.kind).toBe('postgres');
  });

  it('never puts the password in the label it logs', () => {
    const spec = databaseSpec({ ...defaults, db: 'postgres://u:secret@db.internal:5432/idem' });
    expect(spec.label).toBe('postgres://db.internal:5432/idem');
  });
});
