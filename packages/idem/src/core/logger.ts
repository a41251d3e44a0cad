/** The fields of one log line: ids, names, codes and durations; an undefined field is left out. */
export type LogFields = Record<string, string | number | boolean | undefined>;

/**
 * Structured logging port. Fields carry ids, names, codes and durations, never a request body, a
 * token or any other private input: callers pass only what is safe to keep.
 */
export interface Logger {
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
}

/** A Logger that drops every line: for tests, and for code that must log nowhere. */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };
