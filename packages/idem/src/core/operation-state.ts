import { IdemError } from './errors.js';

/** The states of a durable operation. */
export const OPERATION_STATES = [
  'accepted',
  'running',
  'succeeded',
  'failed',
  'cancel_requested',
  'cancelled',
  'outcome_unknown',
] as const;

/** One of `OPERATION_STATES`: where an operation stands. */
export type OperationState = (typeof OPERATION_STATES)[number];

/**
 * Every legal move, and who may make it. The system never changes a terminal state (`succeeded`,
 * `failed`, `cancelled`). `outcome_unknown` changes only by an operator's resolution, and `failed` or
 * `cancelled` only by an operator's correction to `succeeded`; both are recorded (who, when, why).
 */
const TRANSITIONS: Record<OperationState, readonly OperationState[]> = {
  accepted: ['running', 'cancel_requested', 'failed'],
  running: ['running', 'succeeded', 'failed', 'outcome_unknown', 'cancel_requested'],
  // The worker settles a cancellation request: cancelled only when nothing was or will be done;
  // if success won the race the operation is succeeded.
  cancel_requested: ['cancel_requested', 'running', 'cancelled', 'succeeded', 'failed', 'outcome_unknown'],
  outcome_unknown: [],
  succeeded: [],
  failed: [],
  cancelled: [],
};

const OPERATOR_RESOLUTIONS: Record<OperationState, readonly OperationState[]> = {
  accepted: [],
  running: [],
  cancel_requested: [],
  outcome_unknown: ['succeeded', 'failed'],
  succeeded: [],
  failed: [],
  cancelled: [],
};

/**
 * An operator's correction of a final state once the effect was found to exist at the external
 * system. Only towards `succeeded`: a `succeeded` record rests on the provider's own answer (or an
 * operator's finding) and its result may already have been replayed; a wrong `failed` tells the
 * caller that nothing happened and invites a retry with a new key that repeats the effect, which is
 * worse than any wrong success. An effect undone later is a new action, not a correction.
 */
const OPERATOR_CORRECTIONS: Record<OperationState, readonly OperationState[]> = {
  accepted: [],
  running: [],
  cancel_requested: [],
  outcome_unknown: [],
  succeeded: [],
  failed: ['succeeded'],
  cancelled: ['succeeded'],
};

/** Who makes a move: the worker (`system`), an operator resolving, or an operator correcting. */
export type Mover = 'system' | 'operator' | 'correction';

const TABLES: Record<Mover, Record<OperationState, readonly OperationState[]>> = {
  system: TRANSITIONS,
  operator: OPERATOR_RESOLUTIONS,
  correction: OPERATOR_CORRECTIONS,
};

export function isTerminal(state: OperationState): boolean {
  return state === 'succeeded' || state === 'failed' || state === 'cancelled';
}

/** True when the state may still change without an operator. */
export function isActive(state: OperationState): boolean {
  return state === 'accepted' || state === 'running' || state === 'cancel_requested';
}

export function canTransition(from: OperationState, to: OperationState, by: Mover = 'system'): boolean {
  return TABLES[by][from].includes(to);
}

/** Throws `invalid_argument` for an illegal move; stores call it before every state write. */
export function assertTransition(from: OperationState, to: OperationState, by: Mover = 'system'): void {
  if (!canTransition(from, to, by)) {
    throw new IdemError(
      'invalid_argument',
      `illegal operation state change ${from} -> ${to}${by === 'system' ? '' : ` (${by})`}`,
    );
  }
}
