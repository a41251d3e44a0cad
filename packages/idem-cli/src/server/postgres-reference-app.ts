import {
  openPostgres,
  type OpenPostgresOptions,
  type PgClient,
  type PgPool,
  pgTarget,
  translatePgError,
  DEFAULT_LOCK_TIMEOUT_MS,
  PostgresStore,
} from 'idem/postgres';
import { PostgresNotes } from './postgres-notes.js';
import { ReferenceAppBase } from './reference-app-base.js';
import {
  referenceSettings,
  type ReferenceSettings,
  type ReferenceSettingsOptions,
} from './reference-settings.js';

export interface PostgresReferenceAppOptions extends ReferenceSettingsOptions {
  url: string;
  pool?: Omit<OpenPostgresOptions, 'logger'>;
  /** Run migrations on start (default true); `idem migrate` does it on its own. */
  migrate?: boolean;
  /** See PostgresStoreOptions.preparedStatements (default true). */
  preparedStatements?: boolean;
}

/** The reference server on PostgreSQL: several instances may share one database. */
export class PostgresReferenceApp extends ReferenceAppBase<PgClient> {
  readonly store: PostgresStore;
  readonly #pool: PgPool;

  private constructor(
    settings: ReferenceSettings,
    inFlightWaitMs: number | undefined,
    pool: PgPool,
    store: PostgresStore,
    notes: PostgresNotes,
  ) {
    super(settings, store, notes, inFlightWaitMs);
    this.#pool = pool;
    this.store = store;
  }

  static async open(options: PostgresReferenceAppOptions): Promise<PostgresReferenceApp> {
    const settings = referenceSettings(options);
    const { clock } = settings;
    const pool = await openPostgres(options.url, {
      // Reads then need no transaction of their own to honour the lock timeout.
      lockTimeoutMs: options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
      ...options.pool,
      ...(options.logger ? { logger: options.logger } : {}),
    });
    try {
      const store = await PostgresStore.create(pool, {
        clock,
        migrate: options.migrate ?? true,
        preparedStatements: options.preparedStatements ?? true,
        ...(options.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: options.lockTimeoutMs }),
      });
      const notes = await PostgresNotes.create(pool, clock);
      return new PostgresReferenceApp(settings, options.inFlightWaitMs, pool, store, notes);
    } catch (error) {
      await pool.end().catch(() => undefined);
      // The notes table's DDL reports a driver error of its own: name the server like the store does.
      throw translatePgError(error, { target: pgTarget(pool) });
    }
  }

  async close(): Promise<void> {
    await this.store.close();
    await this.#pool.end();
  }
}
