import { parseArgs } from 'node:util';
import { systemClock, DEFAULT_RETENTION_MS, jsonLogger, observeWaitingOperations } from 'idem';
import { FaultPoints } from 'idem/testing';
import { startBackgroundWork } from '../server/background-work.js';
import { CliError } from './cli-error.js';
import { startTelemetry } from './start-telemetry.js';
import { armTestFaults } from './test-faults.js';
import { durationOption } from './options.js';
import { DATABASE_HELP, DATABASE_OPTIONS, databaseSpec, openStore } from './database-options.js';
import { WORK_OPTIONS, workHelp, workSettings } from './work-options.js';
import { COMMAND_OPTIONS, commandHelp, commandSettings, prepareCommandOutput } from './command-options.js';

export const WORKER_HELP = `Usage: idem worker --provider-url URL [options]

Runs the durable-operation worker and the outbox dispatcher alone, against the same database as one
or more \`idem serve --no-worker\` processes. Several workers may run at once: leases keep each
operation with one worker, and a crashed worker's operations are taken over when its lease expires.

Options:
${DATABASE_HELP}
  --retention DUR            how long final records replay (default 24h)
${workHelp('required')}
${commandHelp("Give the servers' file: this worker then runs their run_command\noperations (without it, none)")}
  -h, --help                 show this help

Durations take a unit: 500ms, 5s, 2m, 24h, 30d. Logs are JSON lines on stderr. Spans and metrics
are exported over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/operations.md).`;

/**
 * `idem worker`: checks every flag (a mistake throws CliError, exit 2, before the database is
 * opened), then runs the worker and the outbox dispatcher until SIGINT or SIGTERM. `--help` prints
 * WORKER_HELP to `out` and returns.
 */
export async function workerCommand(argv: string[], out: (text: string) => void): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...DATABASE_OPTIONS,
      retention: { type: 'string' },
      ...WORK_OPTIONS,
      ...COMMAND_OPTIONS,
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) return out(`${WORKER_HELP}\n`);
  const settings = workSettings(values);
  if (settings.providerUrl === undefined) throw new CliError('idem worker needs --provider-url', 2);
  const retentionMs =
    values.retention === undefined ? DEFAULT_RETENTION_MS : durationOption('--retention', values.retention);
  const commands = commandSettings(values, databaseSpec(values));
  const logger = jsonLogger();
  const faults = new FaultPoints();
  armTestFaults(faults, logger);
  const telemetry = await startTelemetry(process.env, 'idem-worker', logger);
  const opened = await openStore(databaseSpec(values), { logger });
  const { store } = opened;
  const stopObserving = telemetry?.metrics === true ? observeWaitingOperations(store) : () => undefined;
  try {
    prepareCommandOutput(commands);
  } catch (error) {
    await opened.close();
    throw error;
  }
  const stop = startBackgroundWork({
    store,
    faults,
    providerUrl: settings.providerUrl,
    providerMode: settings.providerMode,
    providerKeyRetentionMs: settings.providerKeyRetentionMs,
    policy: settings.policy,
    retentionMs,
    clock: systemClock,
    logger,
    leaseMs: settings.leaseMs,
    pollIntervalMs: settings.pollIntervalMs,
    outboxMaxAttempts: settings.outboxMaxAttempts,
    ...(commands === undefined ? {} : { commandHandler: commands.handler, commandWorkers: commands.workers }),
  });
  logger.info('idem.worker_started', {
    db: databaseSpec(values).label,
    provider_mode: settings.providerMode,
  });
  const shutdown = async (signal: string) => {
    logger.info('idem.stopping', { signal });
    await stop();
    await telemetry?.shutdown();
    stopObserving();
    await opened.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}
