import { parseArgs } from 'node:util';
import { systemClock, DEFAULT_RETENTION_MS } from 'idem';
import { DEFAULT_SWEEP_MAX_DUTY, DEFAULT_TOMBSTONE_TTL_MS } from 'idem/store';
import { durationOption, dutyOption, intOption } from './options.js';
import { DATABASE_HELP, DATABASE_OPTIONS, databaseSpec, openStore } from './database-options.js';

export const SWEEP_HELP = `Usage: idem sweep [options]

Turns receipts past their retention into tombstones (which refuse late retries with key_expired),
deletes tombstones past their own life, and deletes outbox messages (webhooks) delivered longer ago
than --retention (dead letters are kept until re-queued). It works in batches, each its own short
transaction, so running servers are never blocked for long, and prints the counts as one JSON line.

Options:
${DATABASE_HELP}
  --retention DUR            how long a delivered webhook is kept (default 24h, the receipts'
                             retention)
  --tombstone-retention DUR  how long a tombstone refuses its key (default 30d)
  --batch-size N             most rows per transaction (default 500)
  --max-duty D               SQLite: most share of the sweep's time spent in batches, in (0, 1]
                             (default 0.5: after each batch it waits as long as the batch took;
                             1 never waits, for a backlog cleared while nothing else runs)
  -h, --help                 show this help

Durations take a unit: 500ms, 5s, 2m, 24h, 30d.`;

/** `idem sweep`: one sweep of the database, its counts printed to `out` as one JSON line; `--help` prints SWEEP_HELP. */
export async function sweepCommand(argv: string[], out: (text: string) => void): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...DATABASE_OPTIONS,
      retention: { type: 'string' },
      'tombstone-retention': { type: 'string' },
      'batch-size': { type: 'string', default: '500' },
      'max-duty': { type: 'string', default: String(DEFAULT_SWEEP_MAX_DUTY) },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) return out(`${SWEEP_HELP}\n`);
  const batchSize = intOption('--batch-size', values['batch-size'], 1, 100_000);
  const maxDuty = dutyOption('--max-duty', values['max-duty']);
  const tombstoneTtlMs =
    values['tombstone-retention'] === undefined
      ? DEFAULT_TOMBSTONE_TTL_MS
      : durationOption('--tombstone-retention', values['tombstone-retention']);
  const outboxRetentionMs =
    values.retention === undefined ? DEFAULT_RETENTION_MS : durationOption('--retention', values.retention);
  const opened = await openStore(databaseSpec(values));
  const { store } = opened;
  try {
    const result = await store.housekeeping.sweep({
      now: systemClock.now(),
      tombstoneTtlMs,
      batchSize,
      maxDuty,
      outboxRetentionMs,
    });
    const counts = {
      tombstoned: result.tombstoned,
      tombstones_deleted: result.tombstonesDeleted,
      outbox_deleted: result.outboxDeleted,
      batches: result.batches,
    };
    out(`${JSON.stringify(counts)}\n`);
  } finally {
    await opened.close();
  }
}
