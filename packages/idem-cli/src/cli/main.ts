#!/usr/bin/env node
import { isIdemError } from 'idem';
import { CliError } from './cli-error.js';
import { providerCommand } from './provider-command.js';
import { proxyCommand } from './proxy-command.js';
import { opsCommand } from './ops-command.js';
import { consoleCommand } from './console-command.js';
import { workerCommand } from './worker-command.js';
import { migrateCommand } from './migrate-command.js';
import { checkCommand } from './check-command.js';
import { packageVersion } from './package-version.js';
import { serveCommand } from './serve-command.js';
import { sweepCommand } from './sweep-command.js';

const HELP = `Usage: idem <command> [options]

Commands:
  serve              run the reference MCP server (HTTP on 127.0.0.1:3000, or --stdio)
  proxy              put the retry contract in front of any MCP server (stdio command or URL)
  ops                inspect, settle and correct operations; list and re-queue dead letters
  console            the operator console: a web application for what idem ops does
  check              check that the mutating tools of any MCP server keep the retry contract
  migrate            create or upgrade the database tables (SQLite or PostgreSQL)
  sweep              expire old receipts into tombstones, delete old tombstones
  worker             run the durable-operation worker and outbox dispatcher alone
  provider           run the demo deployment provider (loopback HTTP) used for external effects

Options:
  -h, --help         show this help
  -v, --version      print the version of idem

Run "idem <command> --help" for a command's options. Help goes to stdout with exit status 0; a
usage error is one line on stderr, naming the help to read, with exit status 2.`;

type Out = (text: string) => void;

/** What `idem <name> ...` runs: each prints its help to `out` on --help and throws CliError on a mistake. */
const COMMANDS: Readonly<Record<string, (argv: string[], out: Out) => Promise<void>>> = {
  serve: serveCommand,
  proxy: proxyCommand,
  ops: opsCommand,
  console: consoleCommand,
  check: (argv, out) => checkCommand(argv, out),
  migrate: migrateCommand,
  sweep: sweepCommand,
  worker: workerCommand,
  provider: providerCommand,
};

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const out: Out = (text) => void process.stdout.write(text);
  if (command === undefined) {
    const names = Object.keys(COMMANDS);
    throw new CliError(`missing command: ${names.slice(0, -1).join(', ')} or ${names.at(-1)}`, 2);
  }
  if (command === '-h' || command === '--help' || command === 'help') return out(`${HELP}\n`);
  if (command === '-v' || command === '--version') return out(`${packageVersion()}\n`);
  const run = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (run === undefined) throw new CliError(`unknown command ${JSON.stringify(command)}`, 2);
  return run(rest, out);
}

/** The help a usage error points to: the command's own when `argv` names one, else the overview. */
function helpFor(argv: string[]): string {
  const [command] = argv;
  return command !== undefined && Object.hasOwn(COMMANDS, command) ? `idem ${command} --help` : 'idem --help';
}

const argv = process.argv.slice(2);
main(argv).catch((error: unknown) => {
  let code = 1;
  let message: string;
  if (error instanceof CliError) {
    code = error.exitCode;
    message = error.message;
  } else if (isIdemError(error)) {
    message = `${error.code}: ${error.message}`;
  } else if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    code = 2;
    message = (error as Error).message;
  } else {
    message = (error as Error)?.message ?? String(error);
  }
  if (code === 2) message = `${message}; see "${helpFor(argv)}"`;
  process.stderr.write(`idem: ${message}\n`);
  process.exitCode = code;
  // Let stdout drain, but do not hang: a half-started server may hold sockets (an embedded provider) open.
  setTimeout(() => process.exit(code), 200).unref();
});
