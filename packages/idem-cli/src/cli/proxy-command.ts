import { parseArgs } from 'node:util';
import { DEFAULT_RETENTION_MS, jsonLogger, systemClock, type IdemStore } from 'idem';
import { DEFAULT_TOMBSTONE_TTL_MS, DEFAULT_SWEEP_MAX_DUTY } from 'idem/store';
import { openSqlite, SqliteStore, translateSqliteError } from 'idem/sqlite';
import { openPostgres, DEFAULT_LOCK_TIMEOUT_MS, PostgresStore } from 'idem/postgres';
import { startHttpServer } from '../server/http-server.js';
import { serveStdio } from '../server/stdio-server.js';
import { startSweeper } from '../server/sweeper.js';
import { TokenRegistry, type Grant } from '../server/token-registry.js';
import { DEFAULT_MAX_ANSWER_BYTES } from '../proxy/kept-answer.js';
import { ProxyApp } from '../proxy/proxy-server.js';
import { upstreamLabel, type UpstreamSpec } from '../proxy/upstream-connection.js';
import { CliError } from './cli-error.js';
import { stdioGrant } from './stdio-grant.js';
import { DATABASE_HELP, DATABASE_OPTIONS, databaseSpec, type DatabaseSpec } from './database-options.js';
import { HTTP_HELP, HTTP_OPTIONS, httpSettings } from './http-options.js';
import { durationOption, intOption } from './options.js';

export const PROXY_HELP = `Usage: idem proxy [options] -- COMMAND [ARGS...]
       idem proxy [options] --upstream URL

Stands in front of an MCP server (the upstream: a command speaking MCP on stdio, or a Streamable
HTTP URL) and serves its tools over HTTP (or --stdio) with Idem's retry contract: read-only tools
(readOnlyHint) and --exclude'd ones pass through unchanged; every other tool gains a required
idempotency_key, is forwarded once per key (recorded before it is sent), and its answer is kept and
replayed to every retry. A call whose answer never came ends outcome_unknown for an operator
(idem ops); it is never sent again by itself. See docs/proxy.md.

Options:
  --upstream URL             the upstream over Streamable HTTP (instead of -- COMMAND ARGS)
  --upstream-header 'N: V'   a header sent to the upstream, repeatable (e.g. an API key)
  --upstream-token-env VAR   send "Authorization: Bearer $VAR" to the upstream
  --exclude TOOL             pass this tool through unchanged, repeatable or comma-separated
  --upstream-key TOOL=ARG    the upstream tool takes an idempotency key of its own in argument ARG:
                             the proxy sends one derived from the operation there, and may resend
                             an ambiguous attempt with it (repeatable)
  --workspace NAME           the workspace every call acts in (default "default"); the caller's
                             token must hold it
  --status-tool NAME         the status tool's name (default get_operation)
  --call-timeout DUR         how long a forwarded call may take before its outcome is unknown
                             (default 60s)
  --max-answer-bytes N       the largest upstream answer (bytes of its JSON) kept for replay
                             (default 1048576); a larger one is answered to its caller and kept
                             as a record of its size (answer_too_large)
${DATABASE_HELP}
  --port N                   HTTP port (default 3000); the endpoint is http://HOST:PORT/mcp
  --host HOST                HTTP interface (default 127.0.0.1)
  --stdio                    speak MCP on stdin/stdout instead of HTTP
  --tokens FILE              bearer tokens, as for idem serve; without it (and without
                             --jwt-issuer): loopback-only dev mode, principal "dev" (or
                             $IDEM_PRINCIPAL on stdio) and workspace "default". With --stdio,
                             $IDEM_TOKEN names the token to act as.
${HTTP_HELP}
  --retention DUR            how long answers replay (default 24h)
  --tombstone-retention DUR  how long an expired key is refused after that (default 30d)
  --lock-timeout DUR         wait for the write lock before answering busy (default 5s)
  --in-flight-wait DUR       a retry of a running call waits this long (default 5s)
  --lease DUR                how long a forwarded call's lease lasts unrenewed (default 5s): a
                             proxy killed mid-call leaves its call outcome_unknown after it
  --sweep-interval DUR       how often expired answers are swept (default 60s)
  --synchronous FULL|NORMAL  SQLite durability (default FULL)
  -h, --help                 show this help

Durations take a unit: 500ms, 5s, 2m, 24h, 30d. Logs are JSON lines on stderr.`;

/**
 * \`idem proxy\`: checks every flag (a mistake throws CliError, exit 2, before anything starts),
 * connects to the upstream, then serves until SIGINT or SIGTERM (or, with --stdio, stdin's end).
 */
export async function proxyCommand(argv: string[], out: (text: string) => void): Promise<void> {
  const dash = argv.indexOf('--');
  const own = dash === -1 ? argv : argv.slice(0, dash);
  const command = dash === -1 ? [] : argv.slice(dash + 1);
  const { values } = parseArgs({
    args: own,
    options: {
      ...DATABASE_OPTIONS,
      upstream: { type: 'string' },
      'upstream-header': { type: 'string', multiple: true },
      'upstream-token-env': { type: 'string' },
      exclude: { type: 'string', multiple: true },
      'upstream-key': { type: 'string', multiple: true },
      workspace: { type: 'string', default: 'default' },
      'status-tool': { type: 'string', default: 'get_operation' },
      'call-timeout': { type: 'string', default: '60s' },
      'max-answer-bytes': { type: 'string', default: String(DEFAULT_MAX_ANSWER_BYTES) },
      port: { type: 'string', default: '3000' },
      host: { type: 'string', default: '127.0.0.1' },
      stdio: { type: 'boolean', default: false },
      tokens: { type: 'string' },
      retention: { type: 'string' },
      'tombstone-retention': { type: 'string' },
      'lock-timeout': { type: 'string', default: '5s' },
      'in-flight-wait': { type: 'string', default: '5s' },
      lease: { type: 'string', default: '5s' },
      'sweep-interval': { type: 'string', default: '60s' },
      synchronous: { type: 'string', default: 'FULL' },
      ...HTTP_OPTIONS,
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return out(`${PROXY_HELP}\n`);
  const upstream = upstreamSpec(
    values.upstream,
    command,
    values['upstream-header'],
    values['upstream-token-env'],
  );
  const port = intOption('--port', values.port, 0, 65_535);
  const database = databaseSpec(values);
  const retentionMs =
    values.retention === undefined ? DEFAULT_RETENTION_MS : durationOption('--retention', values.retention);
  const tombstoneTtlMs =
    values['tombstone-retention'] === undefined
      ? DEFAULT_TOMBSTONE_TTL_MS
      : durationOption('--tombstone-retention', values['tombstone-retention']);
  const lockTimeoutMs = durationOption('--lock-timeout', values['lock-timeout'], 10 * 60_000);
  const inFlightWaitMs = durationOption('--in-flight-wait', values['in-flight-wait'], 10 * 60_000);
  const callTimeoutMs = durationOption('--call-timeout', values['call-timeout'], 24 * 3_600_000);
  const maxAnswerBytes = intOption('--max-answer-bytes', values['max-answer-bytes'], 1_024, 256 * 1_048_576);
  const leaseMs = durationOption('--lease', values.lease, 10 * 60_000);
  if (leaseMs < 30) throw new CliError('--lease must be at least 30ms', 2);
  const sweepIntervalMs = durationOption('--sweep-interval', values['sweep-interval'], 24 * 3_600_000);
  const synchronous = values.synchronous.toUpperCase();
  if (synchronous !== 'FULL' && synchronous !== 'NORMAL')
    throw new CliError('--synchronous must be FULL or NORMAL', 2);
  const workspace = values.workspace;
  if (workspace.length === 0 || workspace.length > 128)
    throw new CliError('--workspace must be 1 to 128 characters', 2);
  const statusTool = values['status-tool'];
  const exclude = new Set(listValues(values.exclude));
  const upstreamKeys = new Map<string, string>();
  for (const entry of listValues(values['upstream-key'])) {
    const [tool, arg] = entry.split('=', 2);
    if (tool === undefined || arg === undefined || tool === '' || arg === '')
      throw new CliError(`--upstream-key takes TOOL=ARGUMENT, got ${JSON.stringify(entry)}`, 2);
    upstreamKeys.set(tool, arg);
  }
  const http = httpSettings(values, values.host);
  if (values.stdio && http.oauth !== undefined)
    throw new CliError('--jwt-* options are for HTTP; over --stdio use --tokens and $IDEM_TOKEN', 2);

  const logger = jsonLogger();
  const registry =
    values.tokens === undefined ? undefined : TokenRegistry.fromFile(values.tokens, { logger });
  const stopWatchingTokens = registry?.watch() ?? (() => undefined);
  const devGrant: Grant | undefined =
    registry === undefined && http.oauth === undefined
      ? { principal: (values.stdio && process.env.IDEM_PRINCIPAL) || 'dev', workspaces: ['default'] }
      : undefined;
  const opened = await openProxyStore(database, lockTimeoutMs, synchronous);
  let app: ProxyApp<unknown>;
  try {
    app = await ProxyApp.start<unknown>({
      store: opened.store,
      upstream,
      registry: registry ?? (devGrant === undefined ? TokenRegistry.empty() : TokenRegistry.fixed(devGrant)),
      logger,
      workspace,
      tools: { exclude, upstreamKeys, retentionMs, tombstoneTtlMs },
      statusTool,
      callTimeoutMs,
      maxAnswerBytes,
      inFlightWaitMs,
      leaseMs,
      pollIntervalMs: 200,
      relayLogs: values.stdio,
      onClose: opened.close,
    });
  } catch (error) {
    stopWatchingTokens();
    await opened.store.close().catch(() => undefined);
    await opened.close().catch(() => undefined);
    throw new CliError(
      `cannot start the upstream ${upstreamLabel(upstream)}: ${(error as Error)?.message ?? String(error)}`,
      1,
    );
  }
  for (const name of [...exclude, ...upstreamKeys.keys()]) {
    if (!app.tools.some((tool) => tool.upstream.name === name))
      logger.warn('proxy.unknown_tool', { tool: name, message: 'named in --exclude or --upstream-key' });
  }
  const stopSweeper = startSweeper(app.store, {
    intervalMs: sweepIntervalMs,
    batchSize: 500,
    maxDuty: DEFAULT_SWEEP_MAX_DUTY,
    tombstoneTtlMs,
    clock: app.clock,
    logger,
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
    logger.info('idem.serving', {
      transport: 'stdio',
      db: database.label,
      upstream: upstreamLabel(upstream),
    });
  } else {
    const running = await startHttpServer(app, {
      host: values.host,
      port,
      ...(devGrant === undefined ? {} : { devGrant }),
      ...(http.oauth === undefined ? {} : { oauth: http.oauth }),
      ...(http.allowedHosts === undefined ? {} : { allowedHosts: http.allowedHosts }),
      ...(http.allowedOrigins === undefined ? {} : { allowedOrigins: http.allowedOrigins }),
      limits: http.limits,
    });
    close = running.close;
    logger.info('idem.serving', {
      transport: 'http',
      url: running.url,
      db: database.label,
      upstream: upstreamLabel(upstream),
    });
  }
  const shutdown = async (signal: string) => {
    logger.info('idem.stopping', { signal });
    stopWatchingTokens();
    await stopSweeper();
    await close();
    await app.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}

/** The upstream from `--upstream URL` (with headers) or `-- COMMAND ARGS`; exactly one of them. */
function upstreamSpec(
  url: string | undefined,
  command: string[],
  headers: string[] | undefined,
  tokenEnv: string | undefined,
): UpstreamSpec {
  if (url !== undefined && command.length > 0)
    throw new CliError('give the upstream either as --upstream URL or as -- COMMAND ARGS, not both', 2);
  if (url === undefined) {
    const [program, ...args] = command;
    if (program === undefined) throw new CliError('missing upstream: --upstream URL or -- COMMAND ARGS', 2);
    if (headers !== undefined || tokenEnv !== undefined)
      throw new CliError('--upstream-header and --upstream-token-env need --upstream URL', 2);
    return { kind: 'stdio', command: program, args };
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError(`--upstream must be an http(s) URL, got ${JSON.stringify(url)}`, 2);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new CliError(`--upstream must be an http(s) URL, got ${JSON.stringify(url)}`, 2);
  const sent: Record<string, string> = {};
  for (const header of headers ?? []) {
    const colon = header.indexOf(':');
    if (colon < 1) throw new CliError('--upstream-header takes "Name: value"', 2);
    sent[header.slice(0, colon).trim()] = header.slice(colon + 1).trim();
  }
  if (tokenEnv !== undefined) {
    const token = process.env[tokenEnv];
    if (token === undefined || token === '')
      throw new CliError(`--upstream-token-env names ${tokenEnv}, which is not set`, 2);
    sent.Authorization = `Bearer ${token}`;
  }
  return { kind: 'http', url, headers: sent };
}

/** Repeated and comma-separated values, trimmed, without empty ones. */
function listValues(values: string[] | undefined): string[] {
  return (values ?? [])
    .flatMap((value) => value.split(','))
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}

/** Opens (and migrates) the store, SQLite or PostgreSQL; `close` ends what the store does not. */
async function openProxyStore(
  spec: DatabaseSpec,
  lockTimeoutMs: number,
  synchronous: 'FULL' | 'NORMAL',
): Promise<{ store: IdemStore<unknown>; close: () => Promise<void> }> {
  if (spec.kind === 'sqlite') {
    const db = openSqlite(spec.path, { synchronous });
    try {
      const store = new SqliteStore(db, { clock: systemClock, lockTimeoutMs });
      return { store: store as IdemStore<unknown>, close: () => Promise.resolve() };
    } catch (error) {
      db.close();
      throw translateSqliteError(error, 0, spec.path);
    }
  }
  const pool = await openPostgres(spec.url, { lockTimeoutMs: DEFAULT_LOCK_TIMEOUT_MS, ...spec.pool });
  try {
    const store = await PostgresStore.create(pool, {
      clock: systemClock,
      migrate: true,
      preparedStatements: spec.preparedStatements,
      lockTimeoutMs,
    });
    return { store: store as IdemStore<unknown>, close: () => pool.end() };
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
}
