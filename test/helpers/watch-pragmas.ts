import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';

/**
 * The same connection, recording into `log` the source of every `pragma()` call made through it (a
 * store's settings changes are pragmas, so a test can see when and in what order they happen).
 */
export function watchPragmas(db: SqliteDatabase, log: string[]): SqliteDatabase {
  return new Proxy(db, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (property !== 'pragma') {
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      }
      return (source: string, options?: { simple?: boolean }) => {
        log.push(source);
        return target.pragma(source, options);
      };
    },
  });
}
