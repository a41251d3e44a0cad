import { prototypeKeyRefusal } from 'idem/mcp';

/** What to answer instead of handing a parsed message to the MCP transport. */
export interface InboundRefusal {
  readonly status: number;
  readonly body: unknown;
  /** For the log line: why, never what the message contained. */
  readonly reason: 'empty_batch' | 'batch_not_allowed' | 'initialize_in_batch' | 'prototype_key';
}

/** The first MCP revision without JSON-RPC batching (2025-06-18 removed it). */
const FIRST_REVISION_WITHOUT_BATCHES = '2025-06-18';

/**
 * The protocol edge cases Idem answers itself, per the specifications, before the SDK sees them:
 * - an empty array is an Invalid Request (-32600, id null), as JSON-RPC 2.0 prescribes;
 * - a batch under a revision without batching (the request's `MCP-Protocol-Version` is 2025-06-18 or
 *   later) is refused likewise; without that header the server assumes 2025-03-26 (as the transport
 *   specification says), where batches are allowed but the initialize request must not be in one;
 * - a `tools/call` whose arguments hold a `__proto__` key, which the SDK would silently drop, is
 *   answered `invalid_argument` like any other unknown key (see prototypeKeyRefusal). In a batch,
 *   where one answer cannot be spliced into the SDK's, the whole batch is refused and nothing in it runs.
 * Over HTTP a refused batch is answered 400 (the transport's status for input it cannot accept).
 */
export function inboundRefusal(
  message: unknown,
  protocolVersion: string | undefined,
): InboundRefusal | undefined {
  if (!Array.isArray(message)) {
    const refusal = prototypeKeyRefusal(message);
    return refusal === undefined ? undefined : { status: 200, body: refusal, reason: 'prototype_key' };
  }
  if (message.length === 0) return invalidRequest('empty_batch', 'Invalid Request: empty JSON-RPC batch');
  if (protocolVersion !== undefined && protocolVersion >= FIRST_REVISION_WITHOUT_BATCHES) {
    return invalidRequest(
      'batch_not_allowed',
      `Invalid Request: MCP ${protocolVersion} has no JSON-RPC batches; send one message per request`,
    );
  }
  const initialize = message.findIndex(
    (element) => (element as { method?: unknown })?.method === 'initialize',
  );
  if (initialize !== -1) {
    return invalidRequest(
      'initialize_in_batch',
      `Invalid Request: batch element ${initialize}: the initialize request must not be part of a batch`,
    );
  }
  const refused = message.findIndex((element) => prototypeKeyRefusal(element) !== undefined);
  if (refused !== -1) {
    return invalidRequest(
      'prototype_key',
      `Invalid Request: batch element ${refused}: its arguments hold a "__proto__" key, which is not accepted; nothing in this batch was run`,
    );
  }
  return undefined;
}

function invalidRequest(reason: InboundRefusal['reason'], message: string): InboundRefusal {
  return { status: 400, body: { jsonrpc: '2.0', error: { code: -32600, message }, id: null }, reason };
}
