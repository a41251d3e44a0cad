import type { LogFields, Logger } from '../core/logger.js';
import { silentLogger } from '../core/logger.js';
import { jsonLine, jsonLogger } from './json-logger.js';

type Level = 'info' | 'warn' | 'error';

/** A pino logger as it is: `logger.info(object, message)`, recognised by `child` and `bindings`. */
export interface PinoLike {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
  child(...args: never[]): unknown;
  bindings(): object;
}

/** The global `console`, or any `node:console` Console. */
export interface ConsoleLike {
  info(...data: unknown[]): void;
  warn(...data: unknown[]): void;
  error(...data: unknown[]): void;
  log(...data: unknown[]): void;
  dir(...data: unknown[]): void;
  table(...data: unknown[]): void;
}

/** A function that writes one JSON line (a newline included) wherever it likes. */
export type LineWriter = (line: string) => void;

/**
 * What every `logger` option accepts, as it is: an Idem `Logger` (`info(event, fields)`), a pino
 * logger (each line becomes `logger.info({ event, ...fields }, event)`), `console` or any
 * `node:console` Console (each line becomes one JSON line, on `console.warn` for `info` and
 * `warn` and on `console.error` for `error`: the global console writes both to stderr, never to
 * stdout, which may be an MCP stdio channel), or a plain function, which receives each JSON line
 * (`jsonLogger(fn)`).
 */
export type LoggerOption = Logger | PinoLike | ConsoleLike | LineWriter;

/**
 * The Idem `Logger` behind a `logger` option (see `LoggerOption`); undefined logs nothing. Anything
 * else is a `TypeError` here, when the option is given, rather than a crash at the first line
 * (which may come after a commit).
 */
export function toLogger(option: LoggerOption | undefined): Logger {
  if (option === undefined) return silentLogger;
  if (typeof option === 'function') return jsonLogger(option);
  if (typeof option !== 'object' || option === null) throw notALogger();
  if (isPino(option)) {
    const emit =
      (level: Level) =>
      (event: string, fields: LogFields = {}) =>
        option[level]({ event, ...fields }, event);
    return { info: emit('info'), warn: emit('warn'), error: emit('error') };
  }
  if (isConsole(option)) {
    // console.info and console.log write to stdout; console.warn and console.error to stderr.
    const emit = (level: Level, method: 'warn' | 'error') => (event: string, fields?: LogFields) =>
      option[method](jsonLine(level, event, fields).trimEnd());
    return { info: emit('info', 'warn'), warn: emit('warn', 'warn'), error: emit('error', 'error') };
  }
  if (!isLogger(option)) throw notALogger();
  return option;
}

function notALogger(): TypeError {
  return new TypeError(
    'logger must be an Idem Logger (info, warn, error), a pino logger, console, or a function that writes a line',
  );
}

function isPino(option: object): option is PinoLike {
  const candidate = option as Partial<PinoLike>;
  return typeof candidate.child === 'function' && typeof candidate.bindings === 'function';
}

function isConsole(option: object): option is ConsoleLike {
  const candidate = option as Partial<ConsoleLike>;
  return (
    typeof candidate.log === 'function' &&
    typeof candidate.dir === 'function' &&
    typeof candidate.table === 'function'
  );
}

function isLogger(option: object): option is Logger {
  const candidate = option as Partial<Logger>;
  return (
    typeof candidate.info === 'function' &&
    typeof candidate.warn === 'function' &&
    typeof candidate.error === 'function'
  );
}
