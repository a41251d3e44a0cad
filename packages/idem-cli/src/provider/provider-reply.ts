import type { IncomingMessage, ServerResponse } from 'node:http';

/** A reply computed before anything is written, so that faults can act between commit and reply. */
export interface ProviderReply {
  status: number;
  /** The JSON body, already serialized (replays send the stored text byte for byte). */
  json: string;
  headers?: Record<string, string>;
}

export function providerReply(
  status: number,
  body: unknown,
  headers?: Record<string, string>,
): ProviderReply {
  return { status, json: JSON.stringify(body), ...(headers === undefined ? {} : { headers }) };
}

export function errorReply(
  status: number,
  error: string,
  message: string,
  headers?: Record<string, string>,
): ProviderReply {
  return providerReply(status, { error, message }, headers);
}

/** Writes `reply` unless the connection is already gone. */
export function sendReply(res: ServerResponse, reply: ProviderReply): void {
  if (res.destroyed || res.socket?.destroyed === true) return;
  const body = Buffer.from(reply.json, 'utf8');
  res.writeHead(reply.status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(body.length),
    ...reply.headers,
  });
  res.end(body);
}

/** Beyond this many bytes a body is no longer drained (to answer 413) but the connection dropped. */
const DRAIN_LIMIT_BYTES = 4 * 1024 * 1024;

/**
 * The request body, or `undefined` when it is larger than `maxBytes`. An oversized body is drained
 * (so the client reads the 413 instead of a reset) up to a few MiB, then the connection is dropped.
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) chunks.push(chunk);
      else if (size > DRAIN_LIMIT_BYTES) {
        req.destroy();
        resolve(undefined);
      }
    });
    req.once('end', () => resolve(size > maxBytes ? undefined : Buffer.concat(chunks)));
    req.once('error', reject);
  });
}
