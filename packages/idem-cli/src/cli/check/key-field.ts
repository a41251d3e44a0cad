import { isObject } from './unique-template.js';

/** The argument that carries a tool's idempotency key, and how it was recognised. */
export interface KeyField {
  readonly name: string;
  readonly why: string;
}

/** Names that mean an idempotency key wherever they appear (compared without case, `_` or `-`). */
const KEY_NAMES = new Set([
  'idempotencykey',
  'idempotencytoken',
  'idempotencyid',
  'idempotentkey',
  'idemkey',
  'dedupkey',
  'dedupekey',
  'deduplicationkey',
  'deduplicationid',
  'clienttoken',
  'clientrequesttoken',
]);

/**
 * Names that are a key only when the argument is optional or its description says so: a required
 * `requestId` without such words is far more often the id of an existing request (as in a task
 * manager's `get_next_task`) than a key the caller invents.
 */
const WEAK_NAMES = new Set(['requestid', 'clientrequestid', 'requestkey', 'operationkey']);

const SAYS_KEY = /idempot|dedup|de-dup|\bretr(?:y|ies|ied)\b|\bsafe to retry\b/i;

/**
 * The key argument of a tool, from its `inputSchema` alone: a top-level string property named like
 * `idempotency_key`/`idempotencyKey` (or `client_token`, `dedupe_key`, …), else one whose
 * description speaks of idempotency, deduplication or retries, else an optional `request_id`.
 * Undefined when the tool has none: then every retry is a new action.
 */
export function findKeyField(schema: Record<string, unknown>): KeyField | undefined {
  const properties = isObject(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const candidates = Object.entries(properties).filter(([, p]) => isObject(p) && acceptsString(p));
  const normal = (name: string) => name.toLowerCase().replace(/[-_\s]/g, '');
  const described = (p: unknown) =>
    isObject(p) && typeof p.description === 'string' && SAYS_KEY.test(p.description);

  const named = candidates.find(([name]) => KEY_NAMES.has(normal(name)));
  if (named) return { name: named[0], why: 'its name' };
  const told = candidates.find(([, p]) => described(p));
  if (told) return { name: told[0], why: 'its description' };
  const weak = candidates.find(([name]) => WEAK_NAMES.has(normal(name)) && !required.has(name));
  if (weak) return { name: weak[0], why: 'its name (an optional request id)' };
  return undefined;
}

function acceptsString(property: Record<string, unknown>): boolean {
  const { type } = property;
  if (type === undefined) return !('properties' in property) && !('items' in property);
  return type === 'string' || (Array.isArray(type) && type.includes('string'));
}
