import { parseArgs } from 'node:util';
import { SQLITE_SCHEMA_VERSION } from 'idem/sqlite';
import { POSTGRES_SCHEMA_VERSION } from 'idem/postgres';
import { DATABASE_HELP, DATABASE_OPTIONS, databaseSpec, openStore } from './database-options.js';

export const MIGRATE_HELP = `Usage: idem migrate [options]

Creates or upgrades Idem's tables. Migrations are versioned and repeatable: running it again does
nothing, and several instances migrating at once migrate once. \`idem serve\` also migrates on start
unless --no-migrate.

Options:
${DATABASE_HELP}
  -h, --help                 show this help

Prints the database and its schema version as one JSON line.`;

/** `idem migrate`: creates or upgrades the tables and prints the schema version to `out`; `--help` prints MIGRATE_HELP. */
export async function migrateCommand(argv: string[], out: (text: string) => void): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { ...DATABASE_OPTIONS, help: { type: 'boolean', short: 'h', default: false } },
    strict: true,
  });
  if (values.help) return out(`${MIGRATE_HELP}\n`);
  const spec = databaseSpec(values);
  const opened = await openStore(spec, { mustExist: false });
  await opened.close();
  const version = spec.kind === 'sqlite' ? SQLITE_SCHEMA_VERSION : POSTGRES_SCHEMA_VERSION;
  out(`${JSON.stringify({ database: spec.label, schema_version: version })}\n`);
}
