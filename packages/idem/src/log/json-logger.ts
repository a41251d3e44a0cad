import type { LogFields, Logger } from '../core/logger.js';

/** One log line: `{"time":…,"level":…,"event":…,…fields}` and a newline. */
export function jsonLine(level: string, event: string, fields: LogFields = {}, base: LogFields = {}): string {
  return `${JSON.stringify({ time: new Date().toISOString(), level, event, ...base, ...fields })}\n`;
}

/**
 * The logger the reference server uses: JSON lines on stderr (stdout may be an MCP stdio channel).
 * Callers pass only ids, names, codes and durations; this logger adds a timestamp and level and
 * writes nothing else.
 */
export function jsonLogger(
  write: (line: string) => void = (line) => process.stderr.write(line),
  base: LogFields = {},
): Logger {
  const emit = (level: string, event: string, fields?: LogFields) =>
    write(jsonLine(level, event, fields, base));
  return {
    info: (event, fields) => emit('info', event, fields),
    warn: (event, fields) => emit('warn', event, fields),
    error: (event, fields) => emit('error', event, fields),
  };
}
