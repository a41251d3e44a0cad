import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { DEFAULT_RETENTION_MS, jsonLogger } from 'idem';
import { jwtVerifier } from 'idem/mcp';
import { consoleApp } from '../console/console-app.js';
import { hostOriginPolicy } from '../server/host-origin-policy.js';
import { resolvesToLoopback } from '../server/loopback-address.js';
import { TokenRegistry } from '../server/token-registry.js';
import { CliError } from './cli-error.js';
import { DATABASE_HELP, DATABASE_OPTIONS, databaseSpec, openStore } from './database-options.js';
import { durationOption, intOption } from './options.js';

export const CONSOLE_HELP = `Usage: idem console [options]

Serves the operator console, a web application for the operations that need a person: what is
outcome_unknown (oldest first), dead letters, running and stuck work, counts by state, a filtered
list, each operation's timeline; and the actions of idem ops (Resolve, Correct, Cancel, Requeue),
each recorded with who, when and why. Server-rendered pages, no client script, nothing from a CDN.
Also mounted by idem serve --console at /console beside /mcp.

Options:
${DATABASE_HELP}
  --host HOST                HTTP interface (default 127.0.0.1)
  --port N                   HTTP port (default 3001); the console is at http://HOST:PORT/console/
  --tokens FILE              operator tokens: entries of an idem serve tokens file with
                             "role": "operator" sign in (tool tokens are refused). Without it
                             and without --jwt-issuer: loopback-only dev mode, no sign-in, actions
                             recorded as $USER; on any other --host the console refuses to start
  --jwt-issuer URL           accept JWT access tokens of this issuer carrying the scope
                             idem:operator
  --jwt-jwks-url URL         the issuer's signing keys (JWKS); required with --jwt-issuer
  --jwt-audience URL         the audience tokens must carry (default http://HOST:PORT/console)
  --jwt-principal-claim C    the claim naming the operator (default sub)
  --allowed-host H           Host names to answer, as idem serve (default: loopback names, the
                             bound address, interface addresses on 0.0.0.0)
  --allowed-origin O         Origin host names to answer (default: the allowed hosts)
  --retention DUR            how long a resolved operation replays (default 24h)
  -h, --help                 show this help`;

function list(values: string[] | undefined): string[] | undefined {
  const items = (values ?? [])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
  return items.length === 0 ? undefined : items;
}

/**
 * `idem console`: checks every flag (a mistake throws CliError, exit 2), refuses to serve a
 * non-loopback interface without operator credentials, then serves the console until SIGINT or
 * SIGTERM. Logs `idem.console` with its URL once it listens.
 */
export async function consoleCommand(argv: string[], out: (text: string) => void): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...DATABASE_OPTIONS,
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '3001' },
      tokens: { type: 'string' },
      'jwt-issuer': { type: 'string' },
      'jwt-jwks-url': { type: 'string' },
      'jwt-audience': { type: 'string' },
      'jwt-principal-claim': { type: 'string', default: 'sub' },
      'allowed-host': { type: 'string', multiple: true },
      'allowed-origin': { type: 'string', multiple: true },
      retention: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return out(`${CONSOLE_HELP}\n`);
  const port = intOption('--port', values.port, 0, 65_535);
  const database = databaseSpec(values);
  const retentionMs =
    values.retention === undefined ? DEFAULT_RETENTION_MS : durationOption('--retention', values.retention);
  const issuer = values['jwt-issuer'];
  const jwksUrl = values['jwt-jwks-url'];
  if ((issuer === undefined) !== (jwksUrl === undefined))
    throw new CliError('--jwt-issuer and --jwt-jwks-url go together', 2);
  // On the addresses the name resolves to: `127.0.0.1.example.com` is not loopback.
  const loopback = await resolvesToLoopback(values.host);
  if (values.tokens === undefined && issuer === undefined && !loopback)
    throw new CliError(
      `the console on ${values.host} needs operator credentials: --tokens FILE (entries with "role": "operator") or --jwt-issuer; without them it listens on loopback only`,
      2,
    );
  const logger = jsonLogger();
  const registry =
    values.tokens === undefined ? undefined : TokenRegistry.fromFile(values.tokens, { logger });
  const stopWatching = registry?.watch() ?? (() => undefined);
  const opened = await openStore(database, { logger });
  const policy = hostOriginPolicy({
    bindHost: values.host,
    ...(list(values['allowed-host']) === undefined ? {} : { allowedHosts: list(values['allowed-host']) }),
    ...(list(values['allowed-origin']) === undefined
      ? {}
      : { allowedOrigins: list(values['allowed-origin']) }),
  });
  const server = createServer({ headersTimeout: 10_000, requestTimeout: 30_000 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, values.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}/console/`;
  const audience = values['jwt-audience'] ?? `http://${host}:${address.port}/console`;
  const devMode = registry === undefined && issuer === undefined;
  const handler = consoleApp({
    store: opened.store,
    prefix: '/console',
    policy,
    credentials: {
      ...(registry === undefined ? {} : { registry }),
      ...(issuer === undefined || jwksUrl === undefined
        ? {}
        : {
            jwt: jwtVerifier({ issuer, jwksUrl, audience, principalClaim: values['jwt-principal-claim'] }),
          }),
    },
    ...(devMode ? { devPrincipal: process.env.USER || 'operator' } : {}),
    secureCookies: !loopback,
    retentionMs,
    logger,
  });
  server.on('request', (req, res) => {
    if ((req.url ?? '/').split('?')[0] === '/') {
      res.writeHead(303, { Location: '/console/' });
      res.end();
      return;
    }
    void handler(req, res);
  });
  if (devMode)
    logger.warn('idem.dev_mode', { message: 'no --tokens: console without sign-in, loopback only' });
  logger.info('idem.console', { url, db: database.label, allowed_hosts: policy.hosts.join(',') });
  const shutdown = async (signal: string) => {
    logger.info('idem.stopping', { signal });
    stopWatching();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    await opened.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}
