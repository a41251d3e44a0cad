import { IdemError } from './errors.js';

/**
 * Which top-level argument fields a tool's fingerprint covers: only those listed (`include`), or
 * all but those listed (`exclude`). Omitted, it covers every argument. `workspace` is always
 * covered: it scopes the key. A retry that differs only in an uncovered field replays the first
 * call's result (the change is not applied); a difference in a covered field is `payload_conflict`.
 */
export type FingerprintSelection =
  { readonly include: readonly string[] } | { readonly exclude: readonly string[] };

/** The field that scopes every key, covered by every selection. */
const ALWAYS_COVERED = 'workspace';

/**
 * The arguments a fingerprint is computed over: `args` itself without a selection, else a new
 * object with only the covered top-level fields that are present (plus `workspace`). Pure.
 */
export function fingerprintedArguments(
  args: Record<string, unknown>,
  selection: FingerprintSelection | undefined,
): Record<string, unknown> {
  if (selection === undefined) return args;
  const selected: Record<string, unknown> = {};
  if ('include' in selection) {
    for (const field of [ALWAYS_COVERED, ...selection.include]) {
      if (Object.hasOwn(args, field)) selected[field] = args[field];
    }
    return selected;
  }
  const excluded = new Set(selection.exclude);
  for (const [field, value] of Object.entries(args)) {
    if (field === ALWAYS_COVERED || !excluded.has(field)) selected[field] = value;
  }
  return selected;
}

/**
 * The fields a selection covers and those it leaves free, in the order of `fields` (the tool's
 * argument fields, `workspace` first when present). Without a selection every field is covered.
 */
export function fingerprintCoverage(
  fields: readonly string[],
  selection: FingerprintSelection | undefined,
): { readonly covered: readonly string[]; readonly free: readonly string[] } {
  const covers = (field: string): boolean => {
    if (selection === undefined || field === ALWAYS_COVERED) return true;
    return 'include' in selection ? selection.include.includes(field) : !selection.exclude.includes(field);
  };
  return { covered: fields.filter(covers), free: fields.filter((field) => !covers(field)) };
}

/**
 * Checks a selection once, at registration: exactly one of `include` (not empty) or `exclude`,
 * each a list of distinct field names, `workspace` never excluded, and, when the tool's argument
 * fields are known (`fields`), only those. Throws `invalid_argument` naming what is wrong.
 */
export function validateFingerprintSelection(selection: unknown, fields?: readonly string[]): void {
  if (selection === undefined) return;
  const fail = (message: string): never => {
    throw new IdemError('invalid_argument', `fingerprint: ${message}`);
  };
  if (typeof selection !== 'object' || selection === null)
    fail('must be { include: [...] } or { exclude: [...] }');
  const given = selection as { include?: unknown; exclude?: unknown };
  const hasInclude = given.include !== undefined;
  const hasExclude = given.exclude !== undefined;
  if (hasInclude === hasExclude) fail('give exactly one of include or exclude');
  const kind = hasInclude ? 'include' : 'exclude';
  const list = hasInclude ? given.include : given.exclude;
  if (!Array.isArray(list) || list.some((field) => typeof field !== 'string')) {
    fail(`${kind} must be an array of argument field names`);
  }
  const names = list as string[];
  if (kind === 'include' && names.length === 0) {
    fail('include must name at least one field (omit fingerprint to cover every argument)');
  }
  if (new Set(names).size !== names.length) fail(`${kind} names a field twice`);
  if (kind === 'exclude' && names.includes(ALWAYS_COVERED)) {
    fail('workspace is always covered (it scopes the key) and cannot be excluded');
  }
  if (names.includes('idempotency_key'))
    fail('idempotency_key is the key itself, never part of the fingerprint');
  if (fields !== undefined) {
    const unknown = names.filter((field) => field !== ALWAYS_COVERED && !fields.includes(field));
    if (unknown.length > 0) {
      fail(
        `${kind} names ${unknown.map((field) => JSON.stringify(field)).join(', ')}, not a top-level field of the input schema (${fields.join(', ')})`,
      );
    }
  }
}
