import { existsSync } from 'node:fs';
import { parseDuration } from 'idem';
import { CliError } from './cli-error.js';

export function intOption(name: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new CliError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(text)}`, 2);
  }
  return value;
}

/** A share of time in (0, 1], e.g. 0.5; anything else is a usage error (exit 2). */
export function dutyOption(name: string, text: string): number {
  const value = Number(text);
  if (!/^(0?\.\d+|1(\.0*)?)$/.test(text) || !(value > 0 && value <= 1)) {
    throw new CliError(`${name} must be a number above 0 and at most 1, got ${JSON.stringify(text)}`, 2);
  }
  return value;
}

export function existingDb(path: string): string {
  if (!existsSync(path)) throw new CliError(`no database at ${path} (use --db PATH)`);
  return path;
}

/** A duration flag (e.g. 30s, 24h); a bad or out-of-range value is a usage error (exit 2). */
export function durationOption(name: string, text: string, maxMs = Number.MAX_SAFE_INTEGER): number {
  let value: number;
  try {
    value = parseDuration(text);
  } catch (error) {
    throw new CliError(`${name}: ${(error as Error).message}`, 2);
  }
  if (value > maxMs)
    throw new CliError(`${name} must be at most ${maxMs} ms, got ${JSON.stringify(text)}`, 2);
  return value;
}
