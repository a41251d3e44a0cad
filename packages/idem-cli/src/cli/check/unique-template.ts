import { randomBytes } from 'node:crypto';

/** The placeholder replaced by a fresh value per intended action, so that actions differ. */
export const UNIQUE = '{{unique}}';

/** How many characters a filled `{{unique}}` takes: 12 lowercase hex digits. */
export const UNIQUE_LENGTH = 12;

/** A fresh value for `{{unique}}`: 12 random lowercase hex digits (48 bits). */
export function newUnique(): string {
  return randomBytes(UNIQUE_LENGTH / 2).toString('hex');
}

/** The template with every `{{unique}}` in its strings replaced by `unique`. */
export function fillTemplate(template: Record<string, unknown>, unique: string): Record<string, unknown> {
  return fill(template, unique) as Record<string, unknown>;
}

export function fill(value: unknown, unique: string): unknown {
  if (typeof value === 'string') return value.split(UNIQUE).join(unique);
  if (Array.isArray(value)) return value.map((item) => fill(item, unique));
  if (isObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, unique)]));
  }
  return value;
}

/** True when `{{unique}}` appears in some string of `value`: the arguments can vary per action. */
export function hasUnique(value: unknown): boolean {
  if (typeof value === 'string') return value.includes(UNIQUE);
  if (Array.isArray(value)) return value.some(hasUnique);
  if (isObject(value)) return Object.values(value).some(hasUnique);
  return false;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
