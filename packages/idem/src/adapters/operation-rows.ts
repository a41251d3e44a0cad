import type { JsonObject } from '../core/json.js';
import type { OperationIdentity } from '../core/operation-identity.js';
import type {
  AttemptRecord,
  OperationError,
  OperationRecord,
  OperatorChange,
  OutboxMessage,
} from '../core/operation-record.js';
import type { OperationState } from '../core/operation-state.js';
import type { RecordChange } from '../core/operation-changes.js';

/** A row of idem_operations as either driver returns it (pg gives BIGINT as string). */
export interface OperationRow {
  operation_id: string;
  principal: string;
  workspace: string;
  operation: string;
  version: number | string;
  idem_key: string;
  fingerprint: string;
  kind: string;
  status: string;
  resource_id: string | null;
  result_json: string | null;
  args_json: string | null;
  error_json: string | null;
  created_at: number | string;
  updated_at: number | string;
  expires_at: number | string | null;
  deadline_at: number | string | null;
  attempt_count: number | string;
  dispatched: number | boolean;
  lease_owner: string | null;
  lease_expires_at: number | string | null;
  next_attempt_at: number | string | null;
  cancel_requested_at: number | string | null;
  resolved_by: string | null;
  resolved_at: number | string | null;
  audit_json: string | null;
  accepted_trace?: string | null;
}

export interface AttemptRow {
  attempt_id: string;
  operation_id: string;
  number: number | string;
  worker_id: string;
  started_at: number | string;
  ended_at: number | string | null;
  outcome: string | null;
  detail: string | null;
}

export interface OutboxRow {
  id: number | string;
  dedup_key: string;
  destination: string;
  payload_json: string;
  created_at: number | string;
  attempts: number | string;
  dispatched_at: number | string | null;
  last_error: string | null;
  dead_at: number | string | null;
}

export const OPERATION_COLUMNS = [
  'operation_id',
  'principal',
  'workspace',
  'operation',
  'version',
  'idem_key',
  'fingerprint',
  'kind',
  'status',
  'resource_id',
  'result_json',
  'args_json',
  'error_json',
  'created_at',
  'updated_at',
  'expires_at',
  'deadline_at',
  'attempt_count',
  'dispatched',
  'lease_owner',
  'lease_expires_at',
  'next_attempt_at',
  'cancel_requested_at',
  'resolved_by',
  'resolved_at',
  'audit_json',
  'accepted_trace',
] as const;

export function identityParams(identity: OperationIdentity): [string, string, string, number, string] {
  return [identity.principal, identity.workspace, identity.operation, identity.version, identity.key];
}

/** The row of a record, in OPERATION_COLUMNS order. */
export function operationParams(r: OperationRecord): unknown[] {
  return [
    r.operationId,
    ...identityParams(r.identity),
    r.fingerprint,
    r.kind,
    r.status,
    r.resourceId ?? null,
    json(r.result),
    json(r.args),
    json(r.error),
    r.createdAt,
    r.updatedAt,
    r.expiresAt ?? null,
    r.deadlineAt ?? null,
    r.attemptCount,
    r.dispatched ? 1 : 0,
    r.leaseOwner ?? null,
    r.leaseExpiresAt ?? null,
    null,
    r.cancelRequestedAt ?? null,
    r.resolvedBy ?? null,
    r.resolvedAt ?? null,
    json(r.audit),
    r.acceptedTrace ?? null,
  ];
}

export function toRecord(row: OperationRow): OperationRecord {
  return {
    operationId: row.operation_id,
    identity: {
      principal: row.principal,
      workspace: row.workspace,
      operation: row.operation,
      version: Number(row.version),
      key: row.idem_key,
    },
    fingerprint: row.fingerprint,
    kind: row.kind === 'durable' ? 'durable' : 'local',
    status: row.status as OperationState,
    ...(row.resource_id === null ? {} : { resourceId: row.resource_id }),
    ...(row.result_json === null ? {} : { result: JSON.parse(row.result_json) as JsonObject }),
    ...(row.args_json === null ? {} : { args: JSON.parse(row.args_json) as JsonObject }),
    ...(row.error_json === null ? {} : { error: JSON.parse(row.error_json) as OperationError }),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    ...(row.expires_at === null ? {} : { expiresAt: Number(row.expires_at) }),
    ...(row.deadline_at === null ? {} : { deadlineAt: Number(row.deadline_at) }),
    attemptCount: Number(row.attempt_count),
    dispatched: row.dispatched === true || Number(row.dispatched) === 1,
    ...(row.lease_owner === null ? {} : { leaseOwner: row.lease_owner }),
    ...(row.lease_expires_at === null ? {} : { leaseExpiresAt: Number(row.lease_expires_at) }),
    ...(row.cancel_requested_at === null ? {} : { cancelRequestedAt: Number(row.cancel_requested_at) }),
    ...(row.resolved_by === null ? {} : { resolvedBy: row.resolved_by }),
    ...(row.resolved_at === null ? {} : { resolvedAt: Number(row.resolved_at) }),
    ...(row.audit_json === null ? {} : { audit: JSON.parse(row.audit_json) as OperatorChange[] }),
    ...(row.accepted_trace == null ? {} : { acceptedTrace: row.accepted_trace }),
  };
}

export function toAttempt(row: AttemptRow): AttemptRecord {
  return {
    attemptId: row.attempt_id,
    operationId: row.operation_id,
    number: Number(row.number),
    workerId: row.worker_id,
    startedAt: Number(row.started_at),
    ...(row.ended_at === null ? {} : { endedAt: Number(row.ended_at) }),
    ...(row.outcome === null ? {} : { outcome: row.outcome }),
    ...(row.detail === null ? {} : { detail: row.detail }),
  };
}

export function toOutbox(row: OutboxRow): OutboxMessage {
  return {
    id: Number(row.id),
    dedupKey: row.dedup_key,
    destination: row.destination,
    payload: JSON.parse(row.payload_json) as JsonObject,
    createdAt: Number(row.created_at),
    attempts: Number(row.attempts),
    ...(row.dispatched_at === null ? {} : { dispatchedAt: Number(row.dispatched_at) }),
    ...(row.last_error === null ? {} : { lastError: row.last_error }),
    ...(row.dead_at === null ? {} : { deadAt: Number(row.dead_at) }),
  };
}

function json(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

/**
 * The values of an UPDATE of an operation's mutable columns, in this order: status, resource_id,
 * result_json, error_json, expires_at, dispatched, next_attempt_at, lease_owner, lease_expires_at,
 * updated_at, attempt_count, cancel_requested_at, resolved_by, resolved_at, audit_json, then
 * operation_id for the WHERE. Keys absent from `change` keep the current value; `nextAttemptAt` is cleared unless given.
 */
export function changeParams(current: OperationRecord, change: RecordChange): unknown[] {
  const has = (key: string) => Object.prototype.hasOwnProperty.call(change, key);
  const pick = <K extends keyof OperationRecord>(key: K): OperationRecord[K] =>
    (has(key) ? (change as OperationRecord)[key] : current[key]) as OperationRecord[K];
  return [
    pick('status'),
    pick('resourceId') ?? null,
    json(pick('result')),
    json(pick('error')),
    pick('expiresAt') ?? null,
    pick('dispatched') ? 1 : 0,
    change.nextAttemptAt ?? null,
    pick('leaseOwner') ?? null,
    pick('leaseExpiresAt') ?? null,
    pick('updatedAt'),
    pick('attemptCount'),
    pick('cancelRequestedAt') ?? null,
    pick('resolvedBy') ?? null,
    pick('resolvedAt') ?? null,
    json(pick('audit')),
    current.operationId,
  ];
}
