#!/usr/bin/env node
import { isIdemError } from '../core/errors.js';
import { CliError } from './cli-error.js';
import { providerCommand } from './provider-command.js';
import { opsCommand } from './ops-command.js';
import { workerCommand } from './worker-command.js';
import { migrateCommand } from './migrate-command.js';
import { checkCommand } from './check-command.js';
import { serveCommand } from './serve-command.js';
import { sweepCommand } from './sweep-command.js';

const HELP = `Usage: idem <command> [options]

Commands:
  serve              run the reference MCP server (HTTP on 127.0.0.1:3000, or --stdio)
  ops                inspect, settle and correct operations; list and re-queue dead letters
  check              check that the mutating tools of any MCP server keep the retry contract
  migrate            create or upgrade the database tables (SQLite or PostgreSQL)
  sweep              expire old receipts into tombstones, delete old tombstones
  worker             run the durable-operation worker and outbox dispatcher alone
  provider           run the demo deployment provider (loopback HTTP) used for external effects

Run "idem <command> --help" for a command's options.`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const out = (text: string) => void process.stdout.write(text);
  switch (command) {
    case 'serve':
      return serveCommand(rest);
    case 'ops':
      return opsCommand(rest, out);
    case 'sweep':
      return sweepCommand(rest, out);
    case 'check':
      return checkCommand(rest, out);
    case 'migrate':
      return migrateCommand(rest, out);
    case 'worker':
      return workerCommand(rest);
    case 'provider':
      return providerCommand(rest);
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      out(`${HELP}\n`);
      if (command === undefined) throw new CliError('missing command', 2);
      return;
    default:
      throw new CliError(`unknown command ${JSON.stringify(command)}; see "idem --help"`, 2);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
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
  process.stderr.write(`idem: ${message}\n`);
  process.exitCode = code;
  // Let stdout drain, but do not hang: a half-started server may hold sockets (an embedded provider) open.
  setTimeout(() => process.exit(code), 200).unref();
});
