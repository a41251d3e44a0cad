import { parseArgs } from 'node:util';
import { openSqlite } from '../adapters/sqlite/open-sqlite.js';
import { SqliteStore } from '../adapters/sqlite/sqlite-store.js';
import { systemClock } from '../core/clock.js';
import { DEFAULT_TOMBSTONE_TTL_MS } from '../server/reference-app.js';
import { durationOption, existingDb, intOption } from './options.js';

export const SWEEP_HELP = `Usage: idem sweep [--db PATH] [--tombstone-retention DUR] [--batch-size N]

Turns receipts past their retention into tombstones (which refuse late retries with key_expired)
and deletes tombstones past their own life (default 30d), in batches of N rows (default 500), each
its own short transaction so running servers are never blocked for long.`;

export async function sweepCommand(argv: string[], out: (text: string) => void): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      db: { type: 'string', default: './idem.sqlite' },
      'tombstone-retention': { type: 'string' },
      'batch-size': { type: 'string', default: '500' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) return out(`${SWEEP_HELP}\n`);
  const batchSize = intOption('--batch-size', values['batch-size'], 1, 100_000);
  const tombstoneTtlMs =
    values['tombstone-retention'] === undefined
      ? DEFAULT_TOMBSTONE_TTL_MS
      : durationOption('--tombstone-retention', values['tombstone-retention']);
  const store = new SqliteStore(openSqlite(existingDb(values.db)));
  try {
    const result = await store.sweep({ now: systemClock.now(), tombstoneTtlMs, batchSize });
    out(
      `${JSON.stringify({ tombstoned: result.tombstoned, tombstones_deleted: result.tombstonesDeleted, batches: result.batches })}\n`,
    );
  } finally {
    await store.close();
  }
}
