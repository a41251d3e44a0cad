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

export type OperationState = (typeof OPERATION_STATES)[number];

/**
 * Every legal move, and who may make it. Terminal states (`succeeded`, `failed`, `cancelled`) never
 * change. `outcome_unknown` changes only by an operator's resolution, which is recorded.
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

export function isTerminal(state: OperationState): boolean {
  return state === 'succeeded' || state === 'failed' || state === 'cancelled';
}

/** True when the state may still change without an operator. */
export function isActive(state: OperationState): boolean {
  return state === 'accepted' || state === 'running' || state === 'cancel_requested';
}

export function isOperationState(value: unknown): value is OperationState {
  return typeof value === 'string' && (OPERATION_STATES as readonly string[]).includes(value);
}

export function canTransition(
  from: OperationState,
  to: OperationState,
  by: 'system' | 'operator' = 'system',
): boolean {
  return (by === 'operator' ? OPERATOR_RESOLUTIONS : TRANSITIONS)[from].includes(to);
}

/** Throws `invalid_argument` for an illegal move; stores call it before every state write. */
export function assertTransition(
  from: OperationState,
  to: OperationState,
  by: 'system' | 'operator' = 'system',
): void {
  if (!canTransition(from, to, by)) {
    throw new IdemError(
      'invalid_argument',
      `illegal operation state change ${from} -> ${to}${by === 'operator' ? ' (operator)' : ''}`,
    );
  }
}
