import type { LogFields, Logger } from '../core/logger.js';
import { jsonLogger } from '../log/json-logger.js';
import { toLogger, type LoggerOption } from '../log/to-logger.js';

type Level = 'info' | 'warn' | 'error';

/**
 * What an IdemClient's `logger` accepts: every `LoggerOption` the Executor takes (an Idem `Logger`,
 * a pino logger, `console`), or a plain function, which receives each line as one JSON string
 * ending in a newline (as `jsonLogger`'s `write` does).
 */
export type ClientLoggerOption = LoggerOption | ((line: string) => void);

/**
 * The client's logger for `option`, read by `toLogger` as the Executor reads it (a plain function
 * that `toLogger` leaves as it is gets JSON lines). It never throws and never rejects: a line that
 * cannot be written (a logger without that method, one that throws or returns a rejected promise)
 * is dropped, so that logging can never turn an outcome the server committed into an error.
 */
export function clientLogger(option: ClientLoggerOption | undefined): Logger {
  const read = toLogger(option as LoggerOption | undefined) as Partial<Record<Level, unknown>>;
  const fallback = typeof option === 'function' ? jsonLogger(option) : undefined;
  const emit = (level: Level) => (event: string, fields?: LogFields) => {
    try {
      const method = read[level];
      const returned: unknown =
        typeof method === 'function'
          ? (method as Logger[Level]).call(read, event, fields)
          : fallback?.[level](event, fields);
      if (isThenable(returned)) returned.then(undefined, () => undefined);
    } catch {
      // Dropped: the outcome is what the caller needs, the line is not.
    }
  };
  return { info: emit('info'), warn: emit('warn'), error: emit('error') };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
