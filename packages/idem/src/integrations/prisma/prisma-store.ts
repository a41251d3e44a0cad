import { isIdemError } from '../../core/errors.js';
import { translatePgError } from '../../adapters/postgres/postgres-errors.js';
import { postgresDialect } from '../../adapters/postgres/postgres-dialect.js';
import { sqlStore } from '../../adapters/sql/sql-store.js';
import type { IdemStore } from '../../ports/idem-store.js';
import { migrateOn } from '../shared/migrate-on.js';
import type { OrmStoreOptions } from '../shared/orm-store-options.js';
import {
  prismaDriver,
  prismaPgCause,
  type PrismaClientLike,
  type PrismaTransaction,
  type PrismaTransactionOptions,
} from './prisma-driver.js';

export type PrismaStoreOptions = OrmStoreOptions & {
  /** Options of each call's interactive transaction. Default maxWait 5 s, timeout lockTimeoutMs + 10 s. */
  transaction?: PrismaTransactionOptions;
};

interface RawTx {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): PromiseLike<T>;
  $executeRawUnsafe(query: string, ...values: unknown[]): PromiseLike<number>;
}

/**
 * An Idem store on the application's own PrismaClient for PostgreSQL: an effect receives the
 * interactive-transaction client (`prisma.$transaction(async (tx) => ...)`), and Idem's receipt is
 * written in that same transaction with `tx.$queryRawUnsafe` / `$executeRawUnsafe`. Idem's tables
 * are its own (not in the Prisma schema); they are migrated in one interactive transaction.
 * Closing the store leaves the client connected.
 */
export async function prismaStore<P extends PrismaClientLike>(
  prisma: P,
  options: PrismaStoreOptions = {},
): Promise<IdemStore<PrismaTransaction<P>>> {
  if (options.migrate ?? true) {
    try {
      await prisma.$transaction(
        ((tx: RawTx) =>
          migrateOn(async (text, values) => {
            // A SELECT whose rows are read; not the advisory lock's, whose void Prisma cannot decode.
            if (/^\s*SELECT\b/i.test(text) && !/\bpg_advisory_/i.test(text)) {
              const rows = await tx.$queryRawUnsafe<Record<string, unknown>[]>(text, ...values);
              return { rows, rowCount: rows.length };
            }
            return { rows: [], rowCount: await tx.$executeRawUnsafe(text, ...values) };
          }, true)) as never,
        { maxWait: 10_000, timeout: 60_000 },
      );
    } catch (error) {
      const cause = isIdemError(error) ? undefined : prismaPgCause(error);
      throw cause === undefined ? error : translatePgError(cause);
    }
  }
  return sqlStore(
    prismaDriver(prisma, postgresDialect, options),
    options.clock === undefined ? {} : { clock: options.clock },
  );
}
