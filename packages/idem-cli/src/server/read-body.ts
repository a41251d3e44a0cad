import type { IncomingMessage } from 'node:http';
import type { BodyBudget } from './body-budget.js';

export type BodyRead =
  /** The body; `reservedBytes` stay taken from the budget until the caller releases them. */
  | { readonly kind: 'ok'; readonly text: string; readonly reservedBytes: number }
  /** Over `maxBytes` (declared or as it arrived): answer 413. */
  | { readonly kind: 'too_large' }
  /** The budget of all in-flight bodies is spent: answer 503 with Retry-After. */
  | { readonly kind: 'over_budget' }
  /** The client went away before the body was complete: nothing to answer. */
  | { readonly kind: 'aborted' }
  /** The bytes are not UTF-8: answer a JSON-RPC parse error (never decode them with U+FFFD). */
  | { readonly kind: 'not_utf8' };

/** After a refusal the rest of a body is read and discarded up to this much, then the connection dropped. */
export const DISCARD_LIMIT_BYTES = 8 * 1024 * 1024;

/**
 * Reads a request body of at most `maxBytes`, holding its bytes against `budget` (a declared
 * Content-Length up front, before a byte is read; chunked bodies chunk by chunk). A refused body is
 * not buffered: the rest of it is discarded (see `discardBody`), so that the caller's 413 or 503
 * reaches the client as an answer rather than as a reset connection. The text is decoded strictly:
 * a body that is not UTF-8 is `not_utf8`, never text with U+FFFD in place of its bad bytes (two
 * different bodies would then read as the same arguments and replay each other's receipt).
 */
export function readBody(req: IncomingMessage, maxBytes: number, budget: BodyBudget): Promise<BodyRead> {
  const header = req.headers['content-length'];
  const length = header === undefined ? Number.NaN : Number(header);
  // node's parser refuses a malformed Content-Length; a chunked body has none.
  const declared = Number.isSafeInteger(length) && length >= 0 ? length : undefined;
  if (declared !== undefined && declared > maxBytes) return refuse(req, { kind: 'too_large' });
  if (declared !== undefined && !budget.reserve(declared)) return refuse(req, { kind: 'over_budget' });
  let reserved = declared ?? 0;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (read: BodyRead) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      req.off('error', onClose);
      if (read.kind !== 'ok') {
        budget.release(reserved);
        reserved = 0;
        chunks.length = 0;
        if (read.kind !== 'aborted') discardBody(req);
      }
      resolve(read);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return finish({ kind: 'too_large' });
      if (declared === undefined) {
        if (!budget.reserve(chunk.length)) return finish({ kind: 'over_budget' });
        reserved += chunk.length;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      const text = strictUtf8(Buffer.concat(chunks));
      finish(text === undefined ? { kind: 'not_utf8' } : { kind: 'ok', text, reservedBytes: reserved });
    };
    const onClose = () => finish({ kind: 'aborted' });
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('close', onClose);
    req.once('error', onClose);
  });
}

/**
 * Reads the rest of a refused body into nothing, up to DISCARD_LIMIT_BYTES, then drops the
 * connection. Closing a socket with unread data makes TCP answer with a reset, which can overtake
 * the answer already sent; reading on lets the client receive the answer first.
 */
export function discardBody(req: IncomingMessage): void {
  let discarded = 0;
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DISCARD_LIMIT_BYTES) req.socket.destroy();
  });
  req.on('error', () => undefined);
  req.resume();
}

function refuse(req: IncomingMessage, read: BodyRead): Promise<BodyRead> {
  discardBody(req);
  return Promise.resolve(read);
}

/** `bytes` as UTF-8, or undefined when they are not UTF-8. A BOM is kept (JSON.parse then refuses it). */
function strictUtf8(bytes: Buffer): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
}
