import { parseArgs } from 'node:util';
import { parseDuration, jsonLogger } from 'idem';
import { CliError } from './cli-error.js';
import { intOption } from './options.js';
import {
  DEFAULT_KEY_RETENTION_MS,
  PROVIDER_MODES,
  startProvider,
  type ProviderMode,
} from '../provider/provider-server.js';

export const PROVIDER_HELP = `Usage: idem provider --mode key|reference|none [options]

Runs the deployment provider: a small HTTP service on loopback that Idem's durable operations call
as their external side effect. With --faults it also serves /_faults, through which any local
process can make it answer errors, drop replies, stall or exit (for tests and demos only). It
answers only requests whose Host header names it (localhost, 127.x.x.x, [::1]; 421 otherwise).

Modes:
  key        honours the Idempotency-Key header on POST /deployments (replay or 422 conflict)
  reference  stores client_reference; GET /deployments?client_reference=R finds deployments
  none       neither: every POST /deployments creates a deployment

Options:
  --mode MODE            key, reference or none (required)
  --port N               HTTP port on 127.0.0.1 (default 4000; 0 picks a free one, see the log)
  --db PATH              SQLite file keeping state across restarts (default :memory:)
  --key-retention DUR    how long an Idempotency-Key replays (default 24h)
  --faults               serve /_faults (GET lists, POST arms, DELETE clears injected faults)
  -h, --help             show this help

Durations take a unit: 500ms, 5s, 2m, 24h. Logs are JSON lines on stderr; the "provider.listening" event
carries the URL. Nothing is printed on stdout.`;

/**
 * `idem provider`: checks every flag (a mistake throws CliError, exit 2), then serves the demo
 * provider until SIGINT or SIGTERM. `--help` prints PROVIDER_HELP to `out` and returns.
 */
export async function providerCommand(argv: string[], out: (text: string) => void): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      mode: { type: 'string' },
      port: { type: 'string', default: '4000' },
      db: { type: 'string', default: ':memory:' },
      'key-retention': { type: 'string' },
      faults: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return out(`${PROVIDER_HELP}\n`);
  if (values.mode === undefined) throw new CliError('--mode is required: key, reference or none', 2);
  if (!(PROVIDER_MODES as readonly string[]).includes(values.mode))
    throw new CliError(`--mode must be key, reference or none, got ${JSON.stringify(values.mode)}`, 2);
  const mode = values.mode as ProviderMode;
  const port = intOption('--port', values.port, 0, 65_535);
  let keyRetentionMs = DEFAULT_KEY_RETENTION_MS;
  if (values['key-retention'] !== undefined) {
    try {
      keyRetentionMs = parseDuration(values['key-retention']);
    } catch (error) {
      throw new CliError(`--key-retention: ${(error as Error).message}`, 2);
    }
  }

  const logger = jsonLogger();
  const provider = await startProvider({
    mode,
    port,
    dbPath: values.db,
    keyRetentionMs,
    logger,
    faultsEndpoint: values.faults,
  });
  logger.info('provider.listening', {
    url: provider.url,
    port: provider.port,
    mode,
    db: values.db,
    faults: values.faults,
  });

  const shutdown = async (signal: string) => {
    logger.info('provider.stopping', { signal });
    await provider.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}
