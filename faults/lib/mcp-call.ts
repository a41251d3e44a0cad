/**
 * One MCP `tools/call` as a plain HTTP POST (the reference server and the proxy are stateless over
 * Streamable HTTP): each call is its own request, so a killed server or a dropped reply fails that
 * call alone, and the workload sees exactly what a caller would.
 */
export type CallAnswer =
  | { kind: 'answer'; isError: boolean; sc: Record<string, unknown>; text: string }
  | { kind: 'rpc_error'; code: number; message: string }
  | { kind: 'http'; status: number; retryAfterMs: number | undefined }
  | { kind: 'lost'; reason: string };

export interface CallOptions {
  token?: string;
  timeoutMs?: number;
}

let nextId = 1;

export async function mcpCall(
  url: string,
  name: string,
  args: Record<string, unknown>,
  options: CallOptions = {},
): Promise<CallAnswer> {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new Error('no reply in time')),
    options.timeoutMs ?? 15_000,
  );
  try {
    const response = await fetch(url, {
      method: 'POST',
      signal: controller.signal,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: nextId++,
        method: 'tools/call',
        params: { name, arguments: args },
      }),
    });
    const body = await response.text();
    const message = parseBody(body);
    if (message === undefined) {
      const retryAfter = response.headers.get('retry-after');
      return {
        kind: 'http',
        status: response.status,
        retryAfterMs: retryAfter === null ? undefined : Number(retryAfter) * 1000,
      };
    }
    if (message.error !== undefined)
      return { kind: 'rpc_error', code: message.error.code, message: message.error.message };
    const result = message.result ?? {};
    const text = (result.content ?? []).map((part) => part.text ?? '').join('\n');
    return { kind: 'answer', isError: result.isError === true, sc: result.structuredContent ?? {}, text };
  } catch (error) {
    return { kind: 'lost', reason: (error as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

interface RpcMessage {
  result?: { isError?: boolean; structuredContent?: Record<string, unknown>; content?: { text?: string }[] };
  error?: { code: number; message: string };
}

function parseBody(body: string): RpcMessage | undefined {
  const candidates = body.trimStart().startsWith('{')
    ? [body]
    : body
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5));
  for (const candidate of candidates) {
    try {
      const value = JSON.parse(candidate) as RpcMessage;
      if (value.result !== undefined || value.error !== undefined) return value;
    } catch {
      // not JSON-RPC
    }
  }
  return undefined;
}

/** Waits `ms` (bounded loops in the workloads sleep between tries). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
