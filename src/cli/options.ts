import { existsSync } from 'node:fs';
import { CliError } from './cli-error.js';

export function intOption(name: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new CliError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(text)}`, 2);
  }
  return value;
}

export function existingDb(path: string): string {
  if (!existsSync(path)) throw new CliError(`no database at ${path} (use --db PATH)`);
  return path;
}
