import { IdemError } from './errors.js';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses "250ms", "30s", "15m", "24h", "30d" or a bare integer of milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+)(ms|s|m|h|d)?$/.exec(text.trim());
  if (match === null) {
    throw new IdemError(
      'invalid_argument',
      `not a duration: ${JSON.stringify(text)} (use e.g. 500ms, 30s, 15m, 24h, 30d)`,
    );
  }
  const value = Number(match[1]) * (UNITS[match[2] ?? 'ms'] as number);
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new IdemError('invalid_argument', `duration out of range: ${JSON.stringify(text)}`);
  }
  return value;
}
