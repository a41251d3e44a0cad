import { createRequire } from 'node:module';
import type pg from 'pg';
import { IdemError } from '../../core/errors.js';

/** What the error says when node-postgres is not installed (the CLI prints it as it is). */
export const PG_MISSING_MESSAGE = 'PostgreSQL support needs the package pg: npm install pg';

let loaded: Promise<typeof pg> | undefined;

/**
 * Loads node-postgres on first use. `pg` is an optional peer dependency: an installation that uses
 * SQLite only never has it, so nothing may import it statically. Missing, it is an `internal`,
 * non-retryable error whose message names the package to install.
 */
export function loadPg(): Promise<typeof pg> {
  loaded ??= import('pg').then(
    (module) => module.default,
    (error: unknown) => {
      loaded = undefined;
      const missing =
        (error as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND' &&
        /['"]pg['"]/.test((error as Error).message);
      throw new IdemError('internal', missing ? PG_MISSING_MESSAGE : 'cannot load the package pg', {
        retryable: false,
        cause: error,
      });
    },
  );
  return loaded;
}

/** Whether the package `pg` can be found from here, without loading it. */
export function pgInstalled(): boolean {
  try {
    createRequire(import.meta.url).resolve('pg');
    return true;
  } catch {
    return false;
  }
}
