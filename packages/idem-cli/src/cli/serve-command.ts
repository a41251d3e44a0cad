import { parseArgs } from 'node:util';
import {
  DEFAULT_RETENTION_MS,
  jsonLogger,
  observeWaitingOperations,
  type Clock,
  storageCauseFields,
  type Logger,
} from 'idem';
import { DEFAULT_TOMBSTONE_TTL_MS, type OperationsLedger, DEFAULT_SWEEP_MAX_DUTY } from 'idem/store';
import { pruneCommandOutput } from 'idem/commands';
import { FaultPoints } from 'idem/testing';
import { sqliteEngineOf } from 'idem/sqlite';
import { startProvider, type RunningProvider } from '../provider/provider-server.js';
import { startBackgroundWork } from '../server/background-work.js';
import { armTestFaults } from './test-faults.js';
import { WORK_OPTIONS, workHelp, workSettings } from './work-options.js';
import { HTTP_HELP, HTTP_OPTIONS, httpSettings } from './http-options.js';
import { startHttpServer } from '../server/http-server.js';
import { resolvesToLoopback } from '../server/loopback-address.js';
import { consoleApp } from '../console/console-app.js';
import { ReferenceApp } from '../server/reference-app.js';
import { PostgresReferenceApp } from '../server/postgres-reference-app.js';
import type { ServerApp } from '../server/server-app.js';
import { DATABASE_HELP, DATABASE_OPTIONS, databaseSpec } from './database-options.js';
import { serveStdio } from '../server/stdio-server.js';
import { startSweeper } from '../server/sweeper.js';
import { TokenRegistry, type Grant } from '../server/token-registry.js';
import { CliError } from './cli-error.js';
import { stdioGrant } from './stdio-grant.js';
import { startTelemetry } from './start-telemetry.js';
import { durationOption, dutyOption, intOption } from './options.js';
import { COMMAND_OPTIONS, commandHelp, commandSettings, prepareCommandOutput } from './command-options.js';

export const SERVE_HELP = `Usage: idem serve [options]

Runs the reference MCP server (create_note, get_note, list_notes, start_deployment, get_operation,
cancel_operation; with --commands also run_command and read_command_output) on SQLite (default)
or PostgreSQL (several instances may share one database).

Options:
${DATABASE_HELP}
  --no-migrate               do not create or upgrade tables on start (see idem migrate)
  --port N                   HTTP port (default 3000); the endpoint is http://HOST:PORT/mcp
  --host HOST                HTTP interface (default 127.0.0.1)
  --stdio                    speak MCP on stdin/stdout instead of HTTP
  --tokens FILE              bearer tokens: {"<token>": {"principal": "...", "workspaces": ["..."]}},
                             each bounded by its own workspaces; re-read when it changes, and while
                             the file is invalid or missing every token is refused. Without it
                             (and without --jwt-issuer): loopback-only dev mode with principal
                             "dev" (or $IDEM_PRINCIPAL on stdio) and workspace "default".
                             With --stdio, $IDEM_TOKEN names the token to act as.
${HTTP_HELP}
  --retention DUR            how long receipts replay, and delivered webhooks and command output
                             are kept (default 24h)
  --tombstone-retention DUR  how long an expired key is refused after that (default 30d)
  --lock-timeout DUR         wait for the write lock before answering busy (default 5s)
  --sweep-interval DUR       how often expired receipts are swept (default 60s)
  --sweep-batch N            most rows per sweep transaction (default 500; each is sized to ~0.25 ms)
  --sweep-max-duty D         SQLite: most share of a sweep's time spent in batches, in (0, 1]
                             (default 0.5: after each batch it waits as long as the batch took)
  --synchronous FULL|NORMAL  SQLite durability (default FULL)
  --in-flight-wait DUR       a retry of a running operation waits this long (default 2s)
  --no-worker                do not run the worker here (run \`idem worker\` instead)
  --console                  also serve the operator console at http://HOST:PORT/console/ (see
                             idem console --help): tokens with "role": "operator" sign in, or
                             JWTs of --jwt-issuer with the scope idem:operator and the audience
                             of /mcp; without --tokens and --jwt-issuer, loopback dev mode
${workHelp('without it an\nin-process demo provider is started')}
${commandHelp('Without it, no command tool is listed')}
  -h, --help                 show this help

Durations take a unit: 500ms, 5s, 2m, 24h, 30d. Logs are JSON lines on stderr. Spans and metrics
are exported over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/operations.md).`;

/**
 * `idem serve`: checks every flag (a mistake throws CliError, exit 2, before anything is opened),
 * then serves until SIGINT or SIGTERM. `--help` prints SERVE_HELP to `out` and returns.
 */
export async function serveCommand(argv: string[], out: (text: string) => void): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...DATABASE_OPTIONS,
      'no-migrate': { type: 'boolean', default: false },
      port: { type: 'string', default: '3000' },
      host: { type: 'string', default: '127.0.0.1' },
      stdio: { type: 'boolean', default: false },
      tokens: { type: 'string' },
      retention: { type: 'string' },
      'tombstone-retention': { type: 'string' },
      'lock-timeout': { type: 'string', default: '5s' },
      'sweep-interval': { type: 'string', default: '60s' },
      'sweep-batch': { type: 'string', default: '500' },
      'sweep-max-duty': { type: 'string', default: String(DEFAULT_SWEEP_MAX_DUTY) },
      synchronous: { type: 'string', default: 'FULL' },
      'in-flight-wait': { type: 'string', default: '2s' },
      'no-worker': { type: 'boolean', default: false },
      console: { type: 'boolean', default: false },
      ...WORK_OPTIONS,
      ...HTTP_OPTIONS,
      ...COMMAND_OPTIONS,
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return out(`${SERVE_HELP}\n`);
  const logger = jsonLogger();
  const synchronous = values.synchronous.toUpperCase();
  if (synchronous !== 'FULL' && synchronous !== 'NORMAL')
    throw new CliError('--synchronous must be FULL or NORMAL', 2);
  // Every flag is checked before anything is opened or created.
  const port = intOption('--port', values.port, 0, 65_535);
  const database = databaseSpec(values);
  const retentionMs =
    values.retention === undefined ? DEFAULT_RETENTION_MS : durationOption('--retention', values.retention);
  const tombstoneTtlMs =
    values['tombstone-retention'] === undefined
      ? DEFAULT_TOMBSTONE_TTL_MS
      : durationOption('--tombstone-retention', values['tombstone-retention']);
  const lockTimeoutMs = durationOption('--lock-timeout', values['lock-timeout'], 10 * 60_000);
  // setInterval cannot wait longer than 2^31-1 ms; a sweep a day is the slowest useful pace.
  const sweepIntervalMs = durationOption('--sweep-interval', values['sweep-interval'], 24 * 3_600_000);
  const sweepBatch = intOption('--sweep-batch', values['sweep-batch'], 1, 100_000);
  const sweepMaxDuty = dutyOption('--sweep-max-duty', values['sweep-max-duty']);
  const inFlightWaitMs = durationOption('--in-flight-wait', values['in-flight-wait'], 60_000);
  const work = workSettings(values);
  const http = httpSettings(values, values.host);
  if (values.stdio && values.console) throw new CliError('--console is for HTTP, not --stdio', 2);
  if (values.stdio && http.oauth !== undefined)
    throw new CliError('--jwt-* options are for HTTP; over --stdio use --tokens and $IDEM_TOKEN', 2);
  const commands = commandSettings(values, database);
  const registry =
    values.tokens === undefined ? undefined : TokenRegistry.fromFile(values.tokens, { logger });
  const stopWatchingTokens = registry?.watch() ?? (() => undefined);
  const devGrant: Grant | undefined =
    registry === undefined && http.oauth === undefined
      ? { principal: (values.stdio && process.env.IDEM_PRINCIPAL) || 'dev', workspaces: ['default'] }
      : undefined;

  const faults = new FaultPoints();
  armTestFaults(faults, logger);
  const telemetry = await startTelemetry(process.env, 'idem', logger);
  // One command, nothing else to run: without --provider-url a demo provider runs in this process.
  const embedded =
    work.providerUrl === undefined
      ? await startProvider({ mode: work.providerMode, logger, keyRetentionMs: work.providerKeyRetentionMs })
      : undefined;
  const providerUrl = work.providerUrl ?? (embedded as RunningProvider).url;
  const common = {
    registry: registry ?? (devGrant === undefined ? TokenRegistry.empty() : TokenRegistry.fixed(devGrant)),
    logger,
    faults,
    retentionMs,
    tombstoneTtlMs,
    lockTimeoutMs,
    providerUrl,
    deploymentPolicy: work.policy,
    inFlightWaitMs,
    ...(commands === undefined ? {} : { commandHandler: commands.handler }),
  };
  let app: ServerApp;
  try {
    app =
      database.kind === 'sqlite'
        ? new ReferenceApp({ ...common, dbPath: database.path, synchronous })
        : await PostgresReferenceApp.open({
            ...common,
            url: database.url,
            pool: database.pool,
            preparedStatements: database.preparedStatements,
            migrate: !values['no-migrate'],
          });
  } catch (error) {
    // A database that cannot be used ends the start with main's one line, naming file or server.
    stopWatchingTokens();
    await embedded?.close();
    throw error;
  }
  // Which engine runs the store: better-sqlite3, node:sqlite (when better-sqlite3 is not installed) or postgres.
  const engine = app instanceof ReferenceApp ? sqliteEngineOf(app.db) : 'postgres';
  try {
    prepareCommandOutput(commands);
  } catch (error) {
    stopWatchingTokens();
    await embedded?.close();
    await app.close();
    throw error;
  }
  const stopObserving = telemetry?.metrics === true ? observeWaitingOperations(app.store) : () => undefined;
  if (commands !== undefined)
    logger.info('idem.commands', {
      commands: [...commands.handler.commands.keys()].join(','),
      output_dir: commands.handler.outputDir,
    });
  if (embedded !== undefined)
    logger.info('idem.embedded_provider', { url: embedded.url, mode: work.providerMode });
  const stopWork = values['no-worker']
    ? async () => undefined
    : startBackgroundWork({
        store: app.store,
        faults: app.faults,
        providerUrl,
        providerMode: work.providerMode,
        providerKeyRetentionMs: work.providerKeyRetentionMs,
        policy: work.policy,
        retentionMs,
        clock: app.clock,
        logger,
        leaseMs: work.leaseMs,
        pollIntervalMs: work.pollIntervalMs,
        outboxMaxAttempts: work.outboxMaxAttempts,
        ...(commands === undefined
          ? {}
          : { commandHandler: commands.handler, commandWorkers: commands.workers }),
      });
  const stopSweeper = startSweeper(app.store, {
    intervalMs: sweepIntervalMs,
    batchSize: sweepBatch,
    maxDuty: sweepMaxDuty,
    tombstoneTtlMs: app.tombstoneTtlMs,
    outboxRetentionMs: retentionMs,
    clock: app.clock,
    logger,
    ...(commands === undefined
      ? {}
      : { afterSweep: pruneAfterSweep(commands.handler.outputDir, app.store.ledger, app.clock, logger) }),
  });

  if (devGrant !== undefined) {
    logger.warn('idem.dev_mode', {
      message: 'no --tokens: unauthenticated dev mode, loopback only',
      principal: devGrant.principal,
      workspace: 'default',
    });
  }

  let close: () => Promise<void>;
  if (values.stdio) {
    close = await serveStdio(app, stdioGrant(registry, devGrant));
    logger.info('idem.serving', { transport: 'stdio', db: database.label, engine });
  } else {
    const loopbackHost = await resolvesToLoopback(values.host);
    const running = await startHttpServer(app, {
      host: values.host,
      port,
      ...(devGrant === undefined ? {} : { devGrant }),
      ...(http.oauth === undefined ? {} : { oauth: http.oauth }),
      ...(http.allowedHosts === undefined ? {} : { allowedHosts: http.allowedHosts }),
      ...(http.allowedOrigins === undefined ? {} : { allowedOrigins: http.allowedOrigins }),
      limits: http.limits,
      ...(values.console
        ? {
            mount: {
              prefix: '/console',
              make: ({ policy, verifier }) =>
                consoleApp({
                  store: app.store,
                  prefix: '/console',
                  policy,
                  credentials: {
                    ...(registry === undefined ? {} : { registry }),
                    ...(verifier === undefined ? {} : { jwt: verifier }),
                  },
                  ...(devGrant === undefined ? {} : { devPrincipal: process.env.USER || 'operator' }),
                  secureCookies: !loopbackHost,
                  retentionMs,
                  logger,
                  clock: app.clock,
                }),
            },
          }
        : {}),
    });
    close = running.close;
    logger.info('idem.serving', {
      transport: 'http',
      url: running.url,
      ...(values.console ? { console: running.url.replace(/\/mcp$/, '/console/') } : {}),
      db: database.label,
      engine,
      allowed_hosts: running.policy.hosts.join(','),
      allowed_origins: running.policy.origins.join(','),
      ...(running.resource === undefined ? {} : { resource_metadata: running.resource.metadataUrl }),
    });
  }

  const shutdown = async (signal: string) => {
    logger.info('idem.stopping', { signal });
    stopWatchingTokens();
    await stopSweeper();
    await stopWork();
    await close();
    await embedded?.close();
    // Before the store closes: the last collection reads it.
    await telemetry?.shutdown();
    stopObserving();
    await app.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}

/**
 * The sweeper's `afterSweep` with `--commands`: removes the output files of the operations the
 * sweep (this server's or another's on the same database) turned into tombstones. Logs counts only.
 */
function pruneAfterSweep(
  dir: string,
  ledger: Pick<OperationsLedger, 'get'>,
  clock: Clock,
  logger: Logger,
): (options: { signal: AbortSignal }) => Promise<void> {
  return async ({ signal }) => {
    const started = clock.monotonic();
    try {
      const result = await pruneCommandOutput(dir, ledger, { signal });
      if (result.files > 0)
        logger.info('commands.output_pruned', {
          operations: result.operations,
          files: result.files,
          duration_ms: Math.round(clock.monotonic() - started),
        });
      if (result.failed > 0)
        logger.warn('commands.output_prune_failed', {
          failed: result.failed,
          code: result.failureCode ?? 'error',
          output_dir: dir,
        });
    } catch (error) {
      if (signal.aborted) return;
      logger.warn('commands.output_prune_failed', {
        code: (error as { code?: string }).code ?? 'internal',
        ...storageCauseFields(error),
      });
    }
  };
}
