import { describe, expect, it } from 'vitest';
import {
  pgTarget,
  translateConnectError,
  translatePgError,
} from '../../packages/idem/src/adapters/postgres/postgres-errors.js';
import type { PgPool } from '../../packages/idem/src/adapters/postgres/postgres-pool.js';
import { translateSqliteError } from '../../packages/idem/src/adapters/sqlite/sqlite-errors.js';
import { IdemError, storageCauseFields } from '../../packages/idem/src/core/errors.js';

// How driver errors become Idem's codes, for the codes a test machine cannot produce for real (a
// PostgreSQL disk that fills, an I/O error on the server, a login refused, ...). The conditions that
// can be produced are tested for real in test/faults/ (disk-full, storage-faults,
// postgres-unavailable) and test/cli/start-up-faults.

const driverError = (code: string, message = 'driver message', extra: object = {}) =>
  Object.assign(new Error(message), { code }, extra);

describe('translateSqliteError', () => {
  const path = '/var/lib/idem/notes.sqlite';
  const cases: [string, boolean, string][] = [
    ['SQLITE_FULL', true, `the database disk is full (SQLITE_FULL) at ${path}; nothing was committed`],
    [
      'SQLITE_READONLY',
      false,
      `the database at ${path} is read-only (SQLITE_READONLY); nothing was committed`,
    ],
    [
      'SQLITE_READONLY_DBMOVED',
      false,
      `the database at ${path} is read-only (SQLITE_READONLY_DBMOVED); nothing was committed`,
    ],
    [
      'SQLITE_IOERR_FSYNC',
      false,
      `an I/O error (SQLITE_IOERR_FSYNC) on the database at ${path}; the transaction was rolled back`,
    ],
    ['SQLITE_CANTOPEN', false, `cannot open the database file at ${path} (SQLITE_CANTOPEN)`],
    ['SQLITE_CORRUPT', false, `the database file at ${path} is corrupt (SQLITE_CORRUPT)`],
    ['SQLITE_NOTADB', false, `the file at ${path} is not a SQLite database (SQLITE_NOTADB)`],
  ];
  for (const [code, retryable, message] of cases) {
    it(`${code}: unavailable, retryable ${retryable}, naming the file`, () => {
      const error = translateSqliteError(driverError(code, 'database or disk is full'), 50, path);
      expect(error).toMatchObject({ code: 'unavailable', retryable, message });
      expect(error.cause).toEqual({ driverCode: code, path });
      expect(error.retryAfterMs === undefined).toBe(!retryable);
      expect(error.nextAction).toMatch(retryable ? /^Retry with the same idempotency_key/ : /^An operator/);
      expect(storageCauseFields(error)).toEqual({ driver_code: code, db_path: path });
    });
  }

  it('keeps busy for lock waits, internal (with the original cause) for anything else', () => {
    expect(translateSqliteError(driverError('SQLITE_BUSY_SNAPSHOT'), 50, path)).toMatchObject({
      code: 'busy',
      retryable: true,
      retryAfterMs: 50,
    });
    const constraint = driverError('SQLITE_CONSTRAINT_PRIMARYKEY');
    const internal = translateSqliteError(constraint, 50, path);
    expect(internal).toMatchObject({ code: 'internal', retryable: false });
    expect(internal.cause).toBe(constraint);
    expect(storageCauseFields(internal)).toEqual({});
    const own = new IdemError('payload_conflict', 'x');
    expect(translateSqliteError(own, 50, path)).toBe(own);
  });

  it('names no file for an in-memory database', () => {
    const error = translateSqliteError(driverError('SQLITE_FULL'), 50, ':memory:');
    expect(error.message).toBe('the database disk is full (SQLITE_FULL); nothing was committed');
    expect(error.cause).toEqual({ driverCode: 'SQLITE_FULL' });
  });
});

describe('translatePgError and translateConnectError', () => {
  const target = { server: 'db.internal:6432', database: 'idem' };

  it('a refused connection is unavailable and retryable, naming host:port, never busy', () => {
    const refused = driverError('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.5:6432', {
      address: '10.0.0.5',
      port: 6432,
    });
    for (const error of [translateConnectError(refused, target), translatePgError(refused, { target })]) {
      expect(error).toMatchObject({
        code: 'unavailable',
        retryable: true,
        message: 'PostgreSQL at db.internal:6432 refused the connection (ECONNREFUSED)',
        cause: { driverCode: 'ECONNREFUSED', server: 'db.internal:6432' },
      });
      expect(error.retryAfterMs).toBeGreaterThan(0);
    }
    // Without a configured target, the socket error's own address names the server.
    expect(translateConnectError(refused).message).toBe(
      'PostgreSQL at 10.0.0.5:6432 refused the connection (ECONNREFUSED)',
    );
  });

  const cases: [string, string, boolean, string][] = [
    [
      '3D000',
      'database "idem" does not exist',
      false,
      'PostgreSQL at db.internal:6432 has no database "idem" (3D000)',
    ],
    [
      '28P01',
      'password authentication failed',
      false,
      'PostgreSQL at db.internal:6432 refused the login (28P01)',
    ],
    ['53300', 'too many clients', true, 'PostgreSQL at db.internal:6432 has too many connections (53300)'],
    [
      '57P03',
      'the database system is starting up',
      true,
      'PostgreSQL at db.internal:6432 is not accepting connections now (57P03)',
    ],
    [
      'ENOTFOUND',
      'getaddrinfo ENOTFOUND',
      false,
      'the host of PostgreSQL at db.internal:6432 was not found (ENOTFOUND)',
    ],
    [
      'EHOSTUNREACH',
      'connect EHOSTUNREACH',
      true,
      'PostgreSQL at db.internal:6432 cannot be reached (EHOSTUNREACH)',
    ],
    [
      '53100',
      'could not extend file: No space left on device',
      true,
      'PostgreSQL at db.internal:6432 has a full disk (53100); nothing was committed',
    ],
    [
      '53200',
      'out of memory',
      true,
      'PostgreSQL at db.internal:6432 is out of memory (53200); nothing was committed',
    ],
    [
      '25006',
      'cannot execute INSERT in a read-only transaction',
      false,
      'PostgreSQL at db.internal:6432 accepts no writes: the transaction is read-only (25006); nothing was committed',
    ],
    [
      '58030',
      'could not write block',
      false,
      'PostgreSQL at db.internal:6432 reported an I/O error (58030); nothing was committed',
    ],
    [
      'XX001',
      'invalid page in block',
      false,
      'PostgreSQL at db.internal:6432 reported corrupted data (XX001); nothing was committed',
    ],
  ];
  for (const [code, driverMessage, retryable, message] of cases) {
    it(`${code}: unavailable, retryable ${retryable}`, () => {
      const error = translatePgError(driverError(code, driverMessage), { target });
      expect(error).toMatchObject({ code: 'unavailable', retryable, message });
      expect(error.cause).toEqual({ driverCode: code, server: 'db.internal:6432' });
      expect(storageCauseFields(error)).toEqual({ driver_code: code, db_server: 'db.internal:6432' });
    });
  }

  it('a connection lost mid-transaction is unavailable (retryable); lost during COMMIT it stays outcome_unknown', () => {
    const losses = [
      driverError('57P01', 'terminating connection due to administrator command'),
      driverError('ECONNRESET', 'read ECONNRESET'),
      new Error('Connection terminated unexpectedly'),
    ];
    for (const loss of losses) {
      const error = translatePgError(loss, { target });
      expect(error).toMatchObject({ code: 'unavailable', retryable: true, retryAfterMs: 100 });
      expect(error.message).toMatch(
        /^the connection to PostgreSQL at db\.internal:6432 was lost \(\S+\); nothing was committed$/,
      );
      expect(translatePgError(loss, { target, duringCommit: true })).toMatchObject({
        code: 'outcome_unknown',
        retryable: true,
      });
    }
    expect(translatePgError(new Error('Connection terminated unexpectedly'), { target }).cause).toEqual({
      driverCode: 'connection_terminated',
      server: 'db.internal:6432',
    });
  });

  it('a server that does not answer within the connect timeout is unavailable; a full pool is busy', () => {
    const timeout = new Error('Connection terminated due to connection timeout');
    expect(translateConnectError(timeout, target)).toMatchObject({
      code: 'unavailable',
      retryable: true,
      message: 'PostgreSQL at db.internal:6432 did not answer within the connect timeout',
      cause: { driverCode: 'connect_timeout' },
    });
    expect(translateConnectError(new Error('timeout exceeded when trying to connect'), target)).toMatchObject(
      {
        code: 'busy',
        retryable: true,
      },
    );
  });

  it('keeps busy for lock and statement timeouts, internal for anything else; never a detail in the message', () => {
    expect(translatePgError(driverError('55P03', 'lock timeout'), { target }).code).toBe('busy');
    expect(translatePgError(driverError('57014', 'canceling statement'), { target }).code).toBe('busy');
    const unique = driverError('23505', 'duplicate key', {
      detail: 'Key (body)=(secret text) already exists.',
    });
    const error = translatePgError(unique, { target });
    expect(error.code).toBe('internal');
    expect(error.message).not.toContain('secret');
  });
});

describe('pgTarget', () => {
  const pool = (options: PgPool['options']) => ({ options }) as unknown as PgPool;

  it('reads host:port and database from the URL, never the password', () => {
    const target = pgTarget(pool({ connectionString: 'postgres://idem:s3cret@db.internal:6432/notes' }));
    expect(target).toEqual({ server: 'db.internal:6432', database: 'notes' });
    expect(JSON.stringify(target)).not.toContain('s3cret');
  });

  it('defaults the port to 5432 and takes host and database from the options otherwise', () => {
    expect(pgTarget(pool({ connectionString: 'postgres://u@127.0.0.1/test' })).server).toBe('127.0.0.1:5432');
    expect(pgTarget(pool({ host: 'h', port: 7000, database: 'd' }))).toEqual({
      server: 'h:7000',
      database: 'd',
    });
  });
});
