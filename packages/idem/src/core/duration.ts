import { IdemError } from './errors.js';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The forms a duration may take, as error messages and help texts list them. */
export const DURATION_FORMS = '500ms, 5s, 2m, 24h, 30d';

/**
 * Parses "250ms", "30s", "15m", "24h" or "30d". The unit is required: a bare number ("24") is
 * refused rather than guessed, since "--retention 24" meant as hours and read as milliseconds
 * would expire every receipt at once. Returns milliseconds; anything else throws an `IdemError`
 * with code `invalid_argument` naming the text.
 */
export function parseDuration(text: string): number {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) {
    throw new IdemError(
      'invalid_argument',
      `${JSON.stringify(text)} has no unit; a duration is an integer and a unit (${DURATION_FORMS})`,
    );
  }
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(trimmed);
  if (match === null) {
    throw new IdemError(
      'invalid_argument',
      `not a duration: ${JSON.stringify(text)}; a duration is an integer and a unit (${DURATION_FORMS})`,
    );
  }
  const value = Number(match[1]) * (UNITS[match[2] as string] as number);
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new IdemError('invalid_argument', `duration out of range: ${JSON.stringify(text)}`);
  }
  return value;
}
