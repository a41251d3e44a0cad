import { randomUUID } from 'node:crypto';

/** A new operation id: one per intended action, stable across every attempt and replay. */
export function newOperationId(): string {
  return `op_${randomUUID().replaceAll('-', '')}`;
}

/** A new attempt id: one per execution of a call, so logs can tell attempts of one operation apart. */
export function newAttemptId(): string {
  return `att_${randomUUID().replaceAll('-', '')}`;
}
