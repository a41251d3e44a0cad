import { randomFillSync } from 'node:crypto';

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

/** Random bytes for ids, drawn from the CSPRNG 2,560 at a time (10 per id). */
const RANDOM = Buffer.alloc(10 * 256);
let randomOffset = RANDOM.length;
/** The last millisecond formatted, and its 12 hex digits: ids made in one ms share them. */
let lastMs = -1;
let lastTime = '';

/** 32 hex digits: `now` (ms, 48 bits) then 80 random bits. */
export function timeOrderedHex(now: number): string {
  if (randomOffset === RANDOM.length) {
    randomFillSync(RANDOM);
    randomOffset = 0;
  }
  const random = RANDOM.toString('hex', randomOffset, randomOffset + 10);
  randomOffset += 10;
  const ms = Math.max(0, Math.floor(now));
  if (ms !== lastMs) {
    lastMs = ms;
    lastTime = ms.toString(16).padStart(12, '0').slice(-12);
  }
  return lastTime + random;
}
