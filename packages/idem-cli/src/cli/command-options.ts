import { mkdirSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { CommandHandler, MIN_OUTPUT_LIMIT_BYTES, loadCommandsFile } from 'idem/commands';
import { CliError } from './cli-error.js';
import type { DatabaseSpec } from './database-options.js';
import { sizeOption } from './http-options.js';
import { durationOption, intOption } from './options.js';

/** Flags of retry-safe command execution, shared by `idem serve` and `idem worker`. */
export const COMMAND_OPTIONS = {
  commands: { type: 'string' },
  'command-output': { type: 'string' },
  'command-output-limit': { type: 'string', default: '1MiB' },
  'command-kill-grace': { type: 'string', default: '5s' },
  'command-workers': { type: 'string', default: '2' },
} as const;

/**
 * The help of COMMAND_OPTIONS, one entry per flag. `commandsNote` ends the entry of --commands with
 * what the file means to the command and what it does without it (a line break indents to the
 * description column).
 */
export function commandHelp(commandsNote: string): string {
  const note = commandsNote.replaceAll('\n', `\n${' '.repeat(29)}`);
  return `  --commands FILE            named commands to offer as run_command / read_command_output:
                             {"migrate": {"argv": ["npm", "run", "migrate"], "cwd": "/srv/app",
                             "timeout": "10m", "rerunnable": false, "description": "...",
                             "env": {"NODE_ENV": "production"}}}; checked at start.
                             ${note}
  --command-output DIR       where each run's output is kept (default: DB.commands/ beside a
                             SQLite file; ./idem-commands with PostgreSQL)
  --command-output-limit N   bytes kept per run: the first quarter and the last three quarters
                             (default 1MiB)
  --command-kill-grace DUR   after SIGTERM to a cancelled or timed-out command, wait this long
                             before SIGKILL (default 5s)
  --command-workers N        worker loops for commands besides the one for other operations
                             (default 2); each runs one operation at a time`;
}

export interface CommandSettings {
  readonly handler: CommandHandler;
  /** Extra worker loops. */
  readonly workers: number;
}

/**
 * The command handler of `--commands`, or undefined without it. Every flag and the whole file are
 * checked here, before anything is opened: any problem is a usage error (exit 2).
 */
export function commandSettings(
  values: {
    commands?: string | undefined;
    'command-output'?: string | undefined;
    'command-output-limit': string;
    'command-kill-grace': string;
    'command-workers': string;
  },
  database: DatabaseSpec,
): CommandSettings | undefined {
  const limit = sizeOption('--command-output-limit', values['command-output-limit']);
  if (limit < MIN_OUTPUT_LIMIT_BYTES)
    throw new CliError(`--command-output-limit must be at least ${MIN_OUTPUT_LIMIT_BYTES} bytes`, 2);
  const killGraceMs = durationOption('--command-kill-grace', values['command-kill-grace'], 10 * 60_000);
  const workers = intOption('--command-workers', values['command-workers'], 1, 64);
  if (values.commands === undefined) {
    if (values['command-output'] !== undefined) throw new CliError('--command-output needs --commands', 2);
    return undefined;
  }
  let commands;
  try {
    commands = loadCommandsFile(values.commands);
  } catch (error) {
    throw new CliError(`--commands: ${(error as Error).message}`, 2);
  }
  const outputDir = resolve(values['command-output'] ?? defaultOutputDir(database));
  return {
    handler: new CommandHandler({ commands, outputDir, outputLimitBytes: limit, killGraceMs }),
    workers,
  };
}

/** Creates the output directory once the server starts; a path that cannot be one ends the start. */
export function prepareCommandOutput(settings: CommandSettings | undefined): void {
  if (settings === undefined) return;
  try {
    mkdirSync(settings.handler.outputDir, { recursive: true, mode: 0o700 }); // owner-only, as the handler writes it
  } catch (error) {
    throw new CliError(
      `--command-output: cannot create ${settings.handler.outputDir}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
}

/** Beside a SQLite file (`idem.sqlite.commands`); with PostgreSQL under the working directory. */
function defaultOutputDir(database: DatabaseSpec): string {
  if (database.kind === 'sqlite') {
    const path = isAbsolute(database.path) ? database.path : resolve(database.path);
    return `${path}.commands`;
  }
  return resolve('idem-commands');
}
