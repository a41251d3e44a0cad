import type { Logger, IdemStore } from 'idem';
import { openSqlite, SqliteStore } from 'idem/sqlite';
import {
  PG_MISSING_MESSAGE,
  pgInstalled,
  openPostgres,
  type OpenPostgresOptions,
  PostgresStore,
} from 'idem/postgres';
import { CliError } from './cli-error.js';
import { durationOption, existingDb, intOption } from './options.js';

/** Flags that choose and tune the database, shared by every command. */
export const DATABASE_OPTIONS = {
  db: { type: 'string' },
  'db-schema': { type: 'string' },
  'pg-pool-max': { type: 'string', default: '10' },
  'pg-statement-timeout': { type: 'string', default: '30s' },
  'pg-connect-timeout': { type: 'string', default: '5s' },
  'pg-no-prepared-statements': { type: 'boolean', default: false },
} as const;

export const DATABASE_HELP = `  --db PATH|URL              SQLite file (default ./idem.sqlite) or postgres://user@host:port/db
                             (default $IDEM_DATABASE_URL when set)
  --db-schema NAME           PostgreSQL schema (search_path) to use, created if missing
  --pg-pool-max N            PostgreSQL connections per process (default 10)
  --pg-statement-timeout DUR PostgreSQL statement_timeout (default 30s)
  --pg-connect-timeout DUR   wait for a PostgreSQL connection (default 5s)
  --pg-no-prepared-statements
                             send no named prepared statements (behind a pooler in transaction
                             mode that does not keep them, such as PgBouncer before 1.21)`;

export type DatabaseSpec =
  | { readonly kind: 'sqlite'; readonly path: string; readonly label: string }
  | {
      readonly kind: 'postgres';
      readonly url: string;
      readonly pool: OpenPostgresOptions;
      /** Whether the store sends its per-call statements as named prepared statements. */
      readonly preparedStatements: boolean;
      readonly label: string;
    };

export function databaseSpec(values: {
  db?: string | undefined;
  'db-schema'?: string | undefined;
  'pg-pool-max': string;
  'pg-statement-timeout': string;
  'pg-connect-timeout': string;
  'pg-no-prepared-statements'?: boolean | undefined;
}): DatabaseSpec {
  const db = values.db ?? process.env.IDEM_DATABASE_URL ?? './idem.sqlite';
  if (!/^postgres(ql)?:\/\//.test(db)) {
    if (values['db-schema'] !== undefined) throw new CliError('--db-schema applies to PostgreSQL only', 2);
    return { kind: 'sqlite', path: db, label: db };
  }
  const schema = values['db-schema'];
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new CliError('--db-schema must be a lower-case identifier', 2);
  }
  const url = new URL(db);
  const spec: DatabaseSpec = {
    kind: 'postgres',
    url: db,
    // Never log a password.
    label: `postgres://${url.host}${url.pathname}${schema ? `#${schema}` : ''}`,
    pool: {
      max: intOption('--pg-pool-max', values['pg-pool-max'], 1, 1000),
      statementTimeoutMs: durationOption('--pg-statement-timeout', values['pg-statement-timeout'], 3_600_000),
      connectionTimeoutMs: durationOption('--pg-connect-timeout', values['pg-connect-timeout'], 600_000),
      ...(schema === undefined ? {} : { schema }),
    },
    preparedStatements: values['pg-no-prepared-statements'] !== true,
  };
  // `pg` is an optional peer dependency: after the usage checks, and before anything starts, say
  // which package is missing (exit 1: the command line is right, the installation lacks a package).
  if (!pgInstalled()) throw new CliError(PG_MISSING_MESSAGE, 1);
  return spec;
}

/** Opens the store for an operator command (ops, sweep, worker, migrate). */
export async function openStore(
  spec: DatabaseSpec,
  options: { logger?: Logger; mustExist?: boolean } = {},
): Promise<{ store: IdemStore; close(): Promise<void> }> {
  if (spec.kind === 'sqlite') {
    const path = options.mustExist === false ? spec.path : existingDb(spec.path);
    const store = new SqliteStore(openSqlite(path));
    return { store, close: () => store.close() };
  }
  const pool = await openPostgres(spec.url, {
    ...spec.pool,
    ...(options.logger ? { logger: options.logger } : {}),
  });
  try {
    const store = await PostgresStore.create(pool, {
      preparedStatements: spec.preparedStatements,
    });
    return {
      store,
      close: async () => {
        await store.close();
        await pool.end();
      },
    };
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
}
