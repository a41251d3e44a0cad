import type { SqlDialect, SqlDriver } from '../../adapters/sql/sql-driver.js';
import { isPgDriverError, pgOrmDriver, type PgOrmOptions } from '../shared/pg-orm-driver.js';

/** Options of Prisma's interactive transactions (`prisma.$transaction(fn, options)`). */
export interface PrismaTransactionOptions {
  /** How long to wait for a connection from the pool, ms. */
  maxWait?: number;
  /** How long the whole transaction (lock wait, effect, receipt) may take before Prisma rolls it back, ms. */
  timeout?: number;
}

/** What Idem needs of a PrismaClient (any generated client, with a driver adapter or without). */
export interface PrismaClientLike {
  $transaction<R>(fn: (tx: unknown) => Promise<R>, options?: PrismaTransactionOptions): Promise<R>;
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): PromiseLike<T>;
  $executeRawUnsafe(query: string, ...values: unknown[]): PromiseLike<number>;
}

/** The interactive-transaction client a PrismaClient hands `$transaction(async (tx) => ...)`. */
export type PrismaTransaction<P extends PrismaClientLike> = Parameters<Parameters<P['$transaction']>[0]>[0];

interface RawRunner {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): PromiseLike<T>;
  $executeRawUnsafe(query: string, ...values: unknown[]): PromiseLike<number>;
}

/**
 * The PostgreSQL error under Prisma's: a driver adapter reports the SQLSTATE as `originalCode`
 * (in `meta.driverAdapterError.cause`, or in `cause`); a failed raw query as `meta.code` (P2010).
 * Returned node-postgres-shaped (`code`, `message`) for translatePgError.
 */
export function prismaPgCause(error: unknown): unknown {
  // Prisma's own codes (P2010...) look like SQLSTATEs: only an error that is not Prisma's is taken as is.
  const prismaError = /^PrismaClient/.test(String((error as { name?: unknown } | null)?.name));
  if (!prismaError && isPgDriverError(error)) return error;
  const e = error as {
    code?: unknown;
    message?: unknown;
    cause?: unknown;
    meta?: { code?: unknown; message?: unknown; driverAdapterError?: { cause?: unknown } };
  } | null;
  if (e === null || typeof e !== 'object') return undefined;
  for (const cause of [e.meta?.driverAdapterError?.cause, e.cause]) {
    const c = cause as { originalCode?: unknown; originalMessage?: unknown; kind?: unknown } | undefined;
    if (typeof c?.originalCode === 'string') {
      return { code: c.originalCode, message: String(c.originalMessage ?? c.kind ?? '') };
    }
    if (isPgDriverError(cause)) return cause;
  }
  if (e.code === 'P2010' && typeof e.meta?.code === 'string') {
    return { code: e.meta.code, message: String(e.meta.message ?? '') };
  }
  // P1001 (cannot reach the server), P1017 (the server closed the connection).
  if (e.code === 'P1001') return { code: 'ECONNREFUSED', message: String(e.message) };
  if (e.code === 'P1017') return { code: 'ECONNRESET', message: String(e.message) };
  // P2028: the interactive transaction could not start within maxWait, or ran out of its timeout.
  if (e.code === 'P2028') return { code: '57014', message: String(e.message) };
  return undefined;
}

/** Prisma on PostgreSQL: Idem's statements go through `tx.$queryRawUnsafe` / `$executeRawUnsafe`. */
export function prismaDriver<P extends PrismaClientLike>(
  prisma: P,
  dialect: SqlDialect,
  options: PgOrmOptions & { transaction?: PrismaTransactionOptions } = {},
): SqlDriver<PrismaTransaction<P>> {
  const lockTimeoutMs = options.lockTimeoutMs ?? 5000;
  const transactionOptions: PrismaTransactionOptions = {
    maxWait: 5000,
    timeout: lockTimeoutMs + 10_000,
    ...options.transaction,
  };
  return pgOrmDriver<P, PrismaTransaction<P>>(
    {
      engine: 'prisma:postgres',
      db: prisma,
      query: async (on, text, params, want) => {
        const runner = on as unknown as RawRunner;
        // Prisma has one raw call for rows and one for the count of rows changed.
        if (want === 'rows') {
          const rows = await runner.$queryRawUnsafe<unknown[]>(text, ...params);
          return { rows, rowCount: rows.length };
        }
        return { rows: [], rowCount: await runner.$executeRawUnsafe(text, ...params) };
      },
      transaction: (body) =>
        prisma.$transaction(body as (tx: unknown) => Promise<never>, transactionOptions) as Promise<never>,
      driverError: prismaPgCause,
    },
    dialect,
    { ...options, lockTimeoutMs },
  );
}
