import type { JsonObject } from './json.js';

/** Names the ledger sets itself in a success result; business fields never override them. */
const RESERVED = new Set(['status', 'operation_id', 'resource_id', 'replayed']);

/**
 * The stored result of a succeeded durable operation, as every replay returns it: status and ids,
 * then the business fields. The same shape whether the worker or an operator established the
 * success, so that callers need one parser.
 */
export function succeededResult(
  operationId: string,
  resourceId: string,
  fields: JsonObject = {},
): JsonObject {
  const business: JsonObject = {};
  for (const [name, value] of Object.entries(fields)) if (!RESERVED.has(name)) business[name] = value;
  return { status: 'succeeded', operation_id: operationId, resource_id: resourceId, ...business };
}
