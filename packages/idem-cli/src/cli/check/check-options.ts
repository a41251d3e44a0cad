import { parseArgs } from 'node:util';
import { CliError } from '../cli-error.js';
import { durationOption, intOption } from '../options.js';
import type { CheckTargetSpec } from '../check-connection.js';
import { loadCheckConfig, type CheckConfig } from './check-config.js';
import { parseJsonPath, type JsonPath } from './json-path.js';

/** An `--arg NAME=VALUE`: the text as given, and its JSON reading when it has one. */
export interface FixedArgument {
  readonly text: string;
  readonly json: unknown;
}

export interface CheckOptions {
  readonly target: CheckTargetSpec;
  readonly token: string | undefined;
  readonly token2: string | undefined;
  /** `--tool`, in order; empty: the config's tools, else every tool not annotated readOnlyHint. */
  readonly tools: readonly string[];
  readonly args: ReadonlyMap<string, FixedArgument>;
  readonly keyField: string | undefined;
  /** `--scope-field`, in order; empty: the config's, else found by name or description. */
  readonly scopeFields: readonly string[];
  readonly idPath: JsonPath | undefined;
  readonly countTool: string | undefined;
  readonly countPath: JsonPath | undefined;
  readonly config: CheckConfig;
  readonly concurrency: number;
  readonly rounds: number;
  readonly timeoutMs: number;
  readonly json: boolean;
  readonly junit: string | undefined;
}

/** Concurrency rounds by default: a server that races in 20% of rounds still passes only 1.2% of runs. */
export const DEFAULT_ROUNDS = 20;

export const CHECK_HELP = `Usage: idem check (--url URL | -- COMMAND [ARGS...]) [options]

Lists the server's tools, picks the mutating ones (not annotated readOnlyHint), finds each one's
idempotency key argument and builds valid arguments from its inputSchema, then checks the retry
contract and prints a table per tool:
  idempotency key argument      (only when missing) every retry is then a new action
  lost response, then retry     the response is dropped; the retry with the same key gets the same id
  R rounds of N duplicates      N calls with one key at once, R times: one effect, one id per round
  same key, other arguments     refused, nothing changed (one argument outside the scope changed)
  fresh key, same arguments     a second, distinct resource
  another principal, same key   (with --token2) never the first principal's result
A row passes only on evidence: ids compared, or effects counted by a read tool (found by itself
among the readOnlyHint tools, or --count-tool). Without it the row is inconclusive and says what is
missing.

Options:
  --url URL            a Streamable HTTP endpoint (e.g. http://127.0.0.1:3000/mcp)
  -- COMMAND ARGS      a stdio server to spawn (one process per principal)
  --tool NAME          check this tool (repeatable; default every tool not annotated readOnlyHint)
  --arg NAME=VALUE     fix a top-level argument of every tool that has it (repeatable); VALUE is
                       JSON when it parses (5, true, ["a"]), else a string; {{unique}} in it varies
                       per action (e.g. --arg 'path=/tmp/x/{{unique}}.txt')
  --key-field NAME     the idempotency key argument (default: found in the schema)
  --scope-field NAME   an argument that scopes the key, never varied (repeatable; default:
                       workspace, tenant, project, … or a description that says workspace)
  --id-path PATH       where the created resource's id is in a result, e.g. $.id, $.items[0].uuid,
                       $['note-id'] (default: resource_id, id, *_id, uri, resource links, name)
  --count-tool NAME    a read tool whose result lists the effects (default: found by itself)
  --count-path PATH    the array (or number) in its result that counts them (default: the array
                       that one call grows)
  --config FILE        JSON with the same settings per tool (see docs/check.md)
  --token T            bearer token (HTTP) or the value of --token-env (stdio)
  --token2 T           a second principal's token: adds the cross-principal row
  --token-env NAME     environment variable that carries a token to a stdio server (default IDEM_TOKEN)
  --protocol P         the MCP revision to speak: auto (default: 2026-07-28 when the server offers
                       it, else the 2025 handshake), legacy (the 2025 handshake), or 2026-07-28
  --concurrency N      concurrent duplicates per round (default 5)
  --rounds R           rounds of concurrent duplicates (default ${DEFAULT_ROUNDS}: a server that loses
                       the race in a share p of rounds passes all R with probability (1-p)^R)
  --timeout DUR        per call (default 10s)
  --json               print the report as JSON
  --junit FILE         also write the rows as JUnit XML test cases (one test suite per tool)
  -h, --help           show this help

Exit status: 0 when every row passes (or is skipped), 1 when a row fails or the server cannot be
reached, 2 on usage errors (unknown tool, bad path, arguments without a varying part), 3 when no
row failed but some are inconclusive.`;

/** The parsed command line, or undefined for --help. Every mistake is a usage error (exit 2). */
export function parseCheckOptions(argv: string[]): CheckOptions | undefined {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      url: { type: 'string' },
      tool: { type: 'string', multiple: true, default: [] },
      arg: { type: 'string', multiple: true, default: [] },
      'key-field': { type: 'string' },
      'scope-field': { type: 'string', multiple: true, default: [] },
      'id-path': { type: 'string' },
      'count-tool': { type: 'string' },
      'count-path': { type: 'string' },
      token: { type: 'string' },
      token2: { type: 'string' },
      'token-env': { type: 'string', default: 'IDEM_TOKEN' },
      protocol: { type: 'string', default: 'auto' },
      concurrency: { type: 'string', default: '5' },
      rounds: { type: 'string', default: String(DEFAULT_ROUNDS) },
      timeout: { type: 'string', default: '10s' },
      json: { type: 'boolean', default: false },
      junit: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: true,
  });
  if (values.help) return undefined;
  const [command, ...commandArgs] = positionals;
  if ((values.url === undefined) === (command === undefined)) {
    throw new CliError('give exactly one target: --url URL, or -- COMMAND [ARGS...]', 2);
  }
  if (values.url !== undefined && !/^https?:\/\//.test(values.url)) {
    throw new CliError(`--url must be an http:// or https:// URL, got ${JSON.stringify(values.url)}`, 2);
  }
  if (values['count-path'] !== undefined && values['count-tool'] === undefined) {
    throw new CliError('--count-path needs --count-tool NAME (the read tool whose result it points into)', 2);
  }
  const nonEmpty = (name: string, value: string | undefined) => {
    if (value === '') throw new CliError(`${name} must not be empty`, 2);
    return value;
  };
  if (!/^(auto|legacy|\d{4}-\d{2}-\d{2})$/.test(values.protocol)) {
    throw new CliError(
      `--protocol takes auto, legacy or a revision (2026-07-28), got ${JSON.stringify(values.protocol)}`,
      2,
    );
  }
  return {
    target: {
      ...(values.url !== undefined
        ? { url: values.url }
        : { command: command as string, args: commandArgs, tokenEnv: values['token-env'] }),
      protocol: values.protocol,
    },
    token: values.token,
    token2: values.token2,
    tools: values.tool.map((name) => nonEmpty('--tool', name) as string),
    args: fixedArguments(values.arg),
    keyField: nonEmpty('--key-field', values['key-field']),
    scopeFields: values['scope-field'].map((name) => nonEmpty('--scope-field', name) as string),
    idPath: values['id-path'] === undefined ? undefined : parseJsonPath(values['id-path']),
    countTool: nonEmpty('--count-tool', values['count-tool']),
    countPath: values['count-path'] === undefined ? undefined : parseJsonPath(values['count-path']),
    config: values.config === undefined ? {} : loadCheckConfig(values.config),
    concurrency: intOption('--concurrency', values.concurrency, 2, 100),
    rounds: intOption('--rounds', values.rounds, 1, 1000),
    timeoutMs: durationOption('--timeout', values.timeout, 10 * 60_000),
    json: values.json,
    junit: nonEmpty('--junit', values.junit),
  };
}

function fixedArguments(pairs: readonly string[]): Map<string, FixedArgument> {
  const args = new Map<string, FixedArgument>();
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    const name = at < 0 ? '' : pair.slice(0, at);
    if (at <= 0 || name.trim() !== name) {
      throw new CliError(`--arg must be NAME=VALUE, got ${JSON.stringify(pair)}`, 2);
    }
    if (args.has(name)) throw new CliError(`--arg ${name} is given twice`, 2);
    const text = pair.slice(at + 1);
    let json: unknown = text;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON: the text itself
    }
    args.set(name, { text, json });
  }
  return args;
}
