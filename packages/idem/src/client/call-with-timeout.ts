import { SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import type { Clock } from '../core/clock.js';
import { timeoutSignal } from '../core/timeout-signal.js';
import { classifyFailure, type FailureKind } from './classify-failure.js';
import type { McpClient } from './connect-target.js';
import { readToolReply, type ToolReply } from './tool-reply.js';

/** How one attempt of a tool call ended: a reply (success or tool error) or a classified failure. */
export type AttemptResult =
  | { readonly kind: 'reply'; readonly reply: ToolReply }
  | { readonly kind: 'failure'; readonly failure: FailureKind };

export interface CallWithTimeoutOptions {
  /** Returns a connected client; may connect, within this attempt's signal. */
  connection(signal: AbortSignal): Promise<McpClient>;
  /** Told when the connection turned out to be closed, so that the next attempt replaces it. */
  onClosed(client: McpClient): void;
  tool: string;
  args: Record<string, unknown>;
  timeoutMs: number;
  clock: Clock;
  signal?: AbortSignal;
}

/**
 * One attempt: connect if needed, then `tools/call`, all bounded by `timeoutMs` measured on the
 * injected clock. The same bound goes to the SDK as RequestOptions.timeout, so the SDK never adds a
 * timeout (or a retry) of its own. Every failure is returned classified; only the caller's abort is
 * thrown (its reason), leaving the intent pending in the journal.
 */
export async function callWithTimeout(options: CallWithTimeoutOptions): Promise<AttemptResult> {
  const { signal, clock, timeoutMs } = options;
  signal?.throwIfAborted();
  // Aborts with the caller or after timeoutMs on the clock; held until `finally`, whatever the GC does.
  const attempt = timeoutSignal(timeoutMs, { signal, clock });
  let client: McpClient | undefined;
  try {
    client = await abortable(options.connection(attempt.signal), attempt.signal);
    const result = await client.callTool(
      { name: options.tool, arguments: options.args },
      {
        signal: attempt.signal,
        timeout: Math.max(1, Math.ceil(timeoutMs)),
      },
    );
    return { kind: 'reply', reply: readToolReply(result) };
  } catch (error) {
    signal?.throwIfAborted();
    const failure = attempt.signal.aborted
      ? classifyFailure(new SdkError(SdkErrorCode.RequestTimeout, 'attempt timed out'))
      : classifyFailure(error);
    if (
      client !== undefined &&
      (client.transport === undefined || (failure.kind === 'transient' && failure.closed))
    ) {
      options.onClosed(client);
    }
    return { kind: 'failure', failure };
  } finally {
    attempt.dispose();
  }
}

/** Rejects with the signal's reason as soon as it aborts, even if `promise` ignores signals. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
