import { randomUUID } from 'node:crypto';

/**
 * A new operation id: one per intended action, stable across every attempt and replay.
 *
 * `op_` and 32 hex digits: 12 of the creation time in ms, then 20 random (80 bits). Ids created
 * later sort later, so each new one lands on the rightmost page of the index that looks it up by
 * id instead of on a random page: fewer pages written per commit and a hot index that stays small.
 */
export function newOperationId(now: number): string {
  return `op_${timeOrderedHex(now)}`;
}

/** A new attempt id: one per execution of a call, so logs can tell attempts of one operation apart. */
export function newAttemptId(now: number): string {
  return `att_${timeOrderedHex(now)}`;
}

/** 32 hex digits: `now` (ms, 48 bits) then 80 random bits. */
export function timeOrderedHex(now: number): string {
  // 8-4-4-4-12 hex; skip the version digit and the variant group, keep 20 random digits.
  const random = randomUUID();
  const time = Math.max(0, Math.floor(now)).toString(16).padStart(12, '0').slice(-12);
  return time + random.slice(0, 8) + random.slice(9, 13) + random.slice(15, 18) + random.slice(24, 29);
}
