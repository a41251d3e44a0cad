import { parseArgs } from 'node:util';
import { CliError } from './cli-error.js';
import { loadCheckConfig } from './check-config.js';
import { CheckConnection, type CheckTargetSpec } from './check-connection.js';
import { checkReport, formatCheckReport } from './check-report.js';
import { checkRows } from './check-rows.js';
import { durationOption, intOption } from './options.js';

export const CHECK_HELP = `Usage: idem check --config FILE (--url URL | -- COMMAND [ARGS...]) [options]

Checks that one mutating tool of ANY MCP server keeps the retry contract, and prints a table:
  lost response, then retry     the response is dropped; the retry with the same key gets the same id
  N concurrent duplicates       N calls with one key at once: one effect, one id for every caller
  same key, other arguments     refused, nothing changed
  fresh key, same arguments     a second, distinct resource
  another principal, same key   (with --token2) never the first principal's result

Options:
  --config FILE        JSON: {"tool", "keyField", "arguments" (template with {{unique}}),
                       "count": {"tool", "arguments", "path"}, "idPath", "secondArguments"}
  --url URL            a Streamable HTTP endpoint (e.g. http://127.0.0.1:3000/mcp)
  -- COMMAND ARGS      a stdio server to spawn (one process per principal)
  --token T            bearer token (HTTP) or the value of --token-env (stdio)
  --token2 T           a second principal's token: adds the cross-principal row
  --token-env NAME     environment variable that carries a token to a stdio server (default IDEM_TOKEN)
  --concurrency N      concurrent duplicates (default 5)
  --timeout DUR        per call (default 10s)
  --json               print the report as JSON
  -h, --help           show this help

Exit status: 0 when every row passes, 1 when a row fails or the server cannot be reached, 2 on usage errors.`;

/** `idem check`: prints the report to `out`; throws CliError(…, 1) when a row failed. */
export async function checkCommand(
  argv: string[],
  out: (text: string) => void,
  options: { signal?: AbortSignal } = {},
): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      url: { type: 'string' },
      token: { type: 'string' },
      token2: { type: 'string' },
      'token-env': { type: 'string', default: 'IDEM_TOKEN' },
      concurrency: { type: 'string', default: '5' },
      timeout: { type: 'string', default: '10s' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: true,
  });
  if (values.help) {
    out(`${CHECK_HELP}\n`);
    return;
  }
  if (values.config === undefined)
    throw new CliError('--config FILE is required; see "idem check --help"', 2);
  const [command, ...commandArgs] = positionals;
  if ((values.url === undefined) === (command === undefined)) {
    throw new CliError('give exactly one target: --url URL, or -- COMMAND [ARGS...]', 2);
  }
  if (values.url !== undefined && !/^https?:\/\//.test(values.url)) {
    throw new CliError('--url must be an http:// or https:// URL', 2);
  }
  const concurrency = intOption('--concurrency', values.concurrency, 2, 100);
  const timeoutMs = durationOption('--timeout', values.timeout, 10 * 60_000);
  const config = loadCheckConfig(values.config);
  const spec: CheckTargetSpec =
    values.url !== undefined
      ? { url: values.url }
      : { command: command as string, args: commandArgs, tokenEnv: values['token-env'] };

  const opened: CheckConnection[] = [];
  const open = async (token: string | undefined) => {
    try {
      const connection = await CheckConnection.open(spec, token, options.signal);
      opened.push(connection);
      return connection;
    } catch (error) {
      options.signal?.throwIfAborted();
      throw new CliError(`cannot connect to the server: ${(error as Error)?.message ?? String(error)}`, 1);
    }
  };
  try {
    const primary = await open(values.token);
    const second = values.token2 === undefined ? undefined : await open(values.token2);
    const rows = await checkRows({
      config,
      primary,
      second,
      timeoutMs,
      concurrency,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    const report = checkReport(primary.label, config.tool, rows);
    out(values.json ? `${JSON.stringify(report, null, 2)}\n` : formatCheckReport(report));
    const failed = rows.filter((row) => row.result === 'fail').length;
    if (failed > 0) throw new CliError(`${failed} of ${rows.length} rows failed`, 1);
  } finally {
    await Promise.all(opened.map((connection) => connection.close()));
  }
}
