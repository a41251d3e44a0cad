import type { LogFields, Logger } from '../core/logger.js';
import { silentLogger } from '../core/logger.js';
import { jsonLine } from './json-logger.js';

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

/**
 * What every `logger` option accepts, as it is: an Idem `Logger` (`info(event, fields)`), a pino
 * logger (each line becomes `logger.info({ event, ...fields }, event)`), or `console` (each line
 * becomes one JSON line, `console.error` for errors). Undefined: nothing is logged.
 */
export type LoggerOption = Logger | PinoLike | ConsoleLike;

/** The Idem `Logger` behind a `logger` option (see `LoggerOption`). */
export function toLogger(option: LoggerOption | undefined): Logger {
  if (option === undefined) return silentLogger;
  if (isPino(option)) {
    const emit =
      (level: Level) =>
      (event: string, fields: LogFields = {}) =>
        option[level]({ event, ...fields }, event);
    return { info: emit('info'), warn: emit('warn'), error: emit('error') };
  }
  if (isConsole(option)) {
    const emit = (level: Level) => (event: string, fields?: LogFields) =>
      option[level](jsonLine(level, event, fields).trimEnd());
    return { info: emit('info'), warn: emit('warn'), error: emit('error') };
  }
  return option;
}

function isPino(option: LoggerOption): option is PinoLike {
  const candidate = option as Partial<PinoLike>;
  return typeof candidate.child === 'function' && typeof candidate.bindings === 'function';
}

function isConsole(option: LoggerOption): option is ConsoleLike {
  const candidate = option as Partial<ConsoleLike>;
  return (
    typeof candidate.log === 'function' &&
    typeof candidate.dir === 'function' &&
    typeof candidate.table === 'function'
  );
}
