import { readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parseDuration } from '../core/duration.js';
import { IdemError } from '../core/errors.js';

/** One named command as the server runs it: never a shell string, never argv from the caller. */
export interface CommandSpec {
  readonly name: string;
  /** The program and its arguments, exactly; `argv[0]` is looked up on the child's PATH. */
  readonly argv: readonly string[];
  /** Absolute working directory. */
  readonly cwd: string;
  /** The process is killed (its group: SIGTERM, then SIGKILL) after this long; the run is `failed`. */
  readonly timeoutMs: number;
  /**
   * Declared safe to run again: after a crash mid-run, the next worker runs it again instead of
   * ending the operation `outcome_unknown`.
   */
  readonly rerunnable: boolean;
  readonly description: string;
  /** Variables added to the child's minimal environment (see `childEnvironment`). */
  readonly env: Readonly<Record<string, string>>;
}

/** Named commands, by name. */
export type CommandSet = ReadonlyMap<string, CommandSpec>;

/** Used when a command declares no timeout. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 10 * 60_000;

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const FIELDS = new Set(['argv', 'cwd', 'timeout', 'rerunnable', 'description', 'env']);

/**
 * Validates a commands object (`{"migrate": {"argv": [...], ...}}`) strictly: unknown fields, a
 * shell-less empty argv, a NUL byte, a duration without a unit, a missing working directory are
 * each an `invalid_argument` naming the command and the field. A relative `cwd` is taken from
 * `baseDir` (the commands file's directory); without `cwd`, `baseDir` itself.
 */
export function parseCommands(value: unknown, baseDir: string): CommandSet {
  if (!isPlainObject(value)) throw invalid('must be a JSON object of named commands');
  const names = Object.keys(value);
  if (names.length === 0) throw invalid('declares no command');
  const commands = new Map<string, CommandSpec>();
  for (const name of names) {
    if (!NAME.test(name))
      throw invalid(
        `command name ${JSON.stringify(name)} must be 1 to 64 letters, digits, "_", "." or "-", starting with a letter or digit`,
      );
    commands.set(name, parseOne(name, value[name], baseDir));
  }
  return commands;
}

/** Reads and validates a commands file; every problem is an `invalid_argument` naming the file. */
export function loadCommandsFile(path: string): CommandSet {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new IdemError(
      'invalid_argument',
      `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new IdemError('invalid_argument', `${path} is not JSON: ${(error as Error).message}`);
  }
  try {
    return parseCommands(parsed, dirname(resolve(path)));
  } catch (error) {
    throw new IdemError('invalid_argument', `${path}: ${(error as Error).message}`);
  }
}

function parseOne(name: string, raw: unknown, baseDir: string): CommandSpec {
  const at = `command ${JSON.stringify(name)}`;
  if (!isPlainObject(raw)) throw invalid(`${at} must be an object`);
  for (const field of Object.keys(raw)) {
    if (!FIELDS.has(field))
      throw invalid(`${at}: unknown field ${JSON.stringify(field)} (allowed: ${[...FIELDS].join(', ')})`);
  }
  const argv = raw.argv;
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === 'string'))
    throw invalid(`${at}: argv must be a non-empty array of strings (no shell: program, then arguments)`);
  if (argv[0] === '') throw invalid(`${at}: argv[0] (the program) must not be empty`);
  if (argv.some((a: string) => a.includes('\0'))) throw invalid(`${at}: argv must not contain NUL`);

  if (raw.cwd !== undefined && (typeof raw.cwd !== 'string' || raw.cwd === ''))
    throw invalid(`${at}: cwd must be a non-empty string`);
  const cwd =
    typeof raw.cwd === 'string' ? (isAbsolute(raw.cwd) ? raw.cwd : resolve(baseDir, raw.cwd)) : baseDir;
  let isDirectory = false;
  try {
    isDirectory = statSync(cwd).isDirectory();
  } catch {
    // reported below
  }
  if (!isDirectory) throw invalid(`${at}: cwd ${cwd} is not a directory`);

  let timeoutMs = DEFAULT_COMMAND_TIMEOUT_MS;
  if (raw.timeout !== undefined) {
    if (typeof raw.timeout !== 'string')
      throw invalid(`${at}: timeout must be a duration string such as "10m"`);
    try {
      timeoutMs = parseDuration(raw.timeout);
    } catch (error) {
      throw invalid(`${at}: timeout: ${(error as Error).message}`);
    }
  }

  if (raw.rerunnable !== undefined && typeof raw.rerunnable !== 'boolean')
    throw invalid(`${at}: rerunnable must be true or false`);
  if (raw.description !== undefined && (typeof raw.description !== 'string' || raw.description.length > 1000))
    throw invalid(`${at}: description must be a string of at most 1000 characters`);

  const env: Record<string, string> = {};
  if (raw.env !== undefined) {
    if (!isPlainObject(raw.env)) throw invalid(`${at}: env must be an object of strings`);
    for (const [key, val] of Object.entries(raw.env)) {
      if (!ENV_NAME.test(key)) throw invalid(`${at}: env name ${JSON.stringify(key)} is not a variable name`);
      if (typeof val !== 'string' || val.includes('\0'))
        throw invalid(`${at}: env.${key} must be a string without NUL`);
      env[key] = val;
    }
  }
  return {
    name,
    argv: [...(argv as string[])],
    cwd,
    timeoutMs,
    rerunnable: raw.rerunnable === true,
    description: typeof raw.description === 'string' ? raw.description : '',
    env,
  };
}

/** Variables the child inherits from the server, when set: enough to find programs and decode text. */
export const INHERITED_ENV = ['PATH', 'HOME', 'LANG'] as const;

/**
 * The child's whole environment: PATH, HOME and LANG from the server (when set), then the
 * command's declared `env` over them. Nothing else of the server's environment (tokens, database
 * URLs, IDEM_*) reaches the child.
 */
export function childEnvironment(
  spec: CommandSpec,
  serverEnv: Readonly<Record<string, string | undefined>> = process.env,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV) {
    const value = serverEnv[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...spec.env };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(message: string): IdemError {
  return new IdemError('invalid_argument', message);
}
