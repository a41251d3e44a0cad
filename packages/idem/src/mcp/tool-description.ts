import { DEFAULT_STATUS_TOOL } from './follow-up.js';

/** Renders a duration for a model to read: "24 hours", "90 minutes", "45 seconds". */
export function humanDuration(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1_000, 'second'],
  ];
  for (const [size, name] of units) {
    if (ms % size === 0 && ms >= size) {
      const n = ms / size;
      if (name === 'day' && n === 1) return '24 hours';
      return `${n} ${name}${n === 1 ? '' : 's'}`;
    }
  }
  return `${ms} milliseconds`;
}

/**
 * The retry contract in words a model follows: when to generate a key, when to reuse it, how long
 * it stays valid, how long an expired key stays refused (`tombstoneMs`, the tombstone window; the
 * server's setting when omitted) and that it is free again after that, what a key of an earlier
 * version of the tool gets, and how to inspect an uncertain outcome. With a `coverage` that leaves
 * fields free (a tool's `fingerprint` selection), it names the fields a retry must repeat exactly
 * and those it may change without effect; otherwise every argument must be repeated.
 */
export function idempotencyInstructions(
  retentionMs: number,
  statusTool = DEFAULT_STATUS_TOOL,
  tombstoneMs?: number,
  coverage?: { readonly covered: readonly string[]; readonly free: readonly string[] },
): string {
  const window = humanDuration(retentionMs);
  const refused =
    tombstoneMs === undefined ? "for the server's tombstone retention" : `for ${humanDuration(tombstoneMs)}`;
  const partial = coverage !== undefined && coverage.free.length > 0;
  const same = partial ? `the same ${listed(coverage.covered)}` : 'the same arguments';
  const different = partial ? `a different ${listed(coverage.covered, 'or')}` : 'different arguments';
  return [
    'Retry safety: this tool takes an idempotency_key.',
    'Generate a new unique key (for example a UUID) once per intended action, before the first attempt, and keep it with your task state.',
    `Reuse the same key with ${same} for every retry of that action: after a timeout, a dropped connection, or a "busy", "running" or retryable "unavailable" result. The original result then comes back with "replayed": true and the action is not performed twice.`,
    ...(partial
      ? [
          `On a retry, repeat ${listed(coverage.covered)} exactly; ${listed(coverage.free)} may be worded differently, but a retry never applies such a change: it returns the original result.`,
        ]
      : []),
    `Never reuse a key for a different action: a used key with ${different} is rejected as payload_conflict and nothing changes.`,
    `A key stays valid for ${window} after the action completed. After that, ${refused}, a retry with it gets key_expired and is not executed; then the key is free again and a call with it would be a new action, so do not retry an action that old: check with a read tool instead.`,
    `After this tool's version changes, a key used with an earlier version is never executed again: a retry with it returns that version's recorded result, or is refused as version_conflict with the operation_id to look up with ${statusTool}.`,
    `If the outcome is uncertain, retry with the same key, or call ${statusTool} with the operation_id from an earlier result.`,
  ].join(' ');
}

/** "a", "a and b", "a, b and c" (or `or`). */
function listed(names: readonly string[], conjunction = 'and'): string {
  if (names.length <= 1) return names.join('');
  return `${names.slice(0, -1).join(', ')} ${conjunction} ${names[names.length - 1] ?? ''}`;
}
