import { describe, expect, it } from 'vitest';
import { toLogger, type ConsoleLike, type LoggerOption } from '../../packages/idem/src/log/to-logger.js';

/** A console whose every method records what it was called with, by name. */
function fakeConsole(): { console: ConsoleLike; calls: Array<[string, string]> } {
  const calls: Array<[string, string]> = [];
  const method = (name: string) => (text: unknown) => calls.push([name, String(text)]);
  return {
    console: {
      log: method('log'),
      info: method('info'),
      warn: method('warn'),
      error: method('error'),
      dir: method('dir'),
      table: method('table'),
    },
    calls,
  };
}

describe('toLogger', () => {
  it('console: every level goes to console.warn or console.error (stderr), never to log or info (stdout)', () => {
    const { console, calls } = fakeConsole();
    const logger = toLogger(console);
    logger.info('idem.call', { outcome: 'executed' });
    logger.warn('idem.sweep_failed');
    logger.error('idem.call', { outcome: 'internal' });
    expect(calls.map(([name]) => name)).toEqual(['warn', 'warn', 'error']);
    expect(calls.map(([, text]) => JSON.parse(text) as Record<string, unknown>)).toEqual([
      expect.objectContaining({ level: 'info', event: 'idem.call', outcome: 'executed' }),
      expect.objectContaining({ level: 'warn', event: 'idem.sweep_failed' }),
      expect.objectContaining({ level: 'error', event: 'idem.call', outcome: 'internal' }),
    ]);
  });

  it('a plain function receives each line as JSON with its newline', () => {
    const lines: string[] = [];
    const logger = toLogger((line: string) => lines.push(line));
    logger.info('idem.call', { outcome: 'replayed' });
    logger.error('idem.call');
    expect(lines).toHaveLength(2);
    expect(lines.every((line) => line.endsWith('\n'))).toBe(true);
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({
      level: 'info',
      event: 'idem.call',
      outcome: 'replayed',
    });
    expect(JSON.parse(lines[1] ?? '')).toMatchObject({ level: 'error', event: 'idem.call' });
  });

  it('refuses, when it is given, what cannot log (rather than crashing at the first line)', () => {
    for (const option of [{ info: () => {} }, 'stderr', null, 42]) {
      expect(() => toLogger(option as unknown as LoggerOption), String(option)).toThrow(TypeError);
    }
  });
});
