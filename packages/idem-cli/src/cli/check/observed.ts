import { type AttemptResult, errorLabel, replyError, type ToolReply } from 'idem/client';
import { findId, type FindIdOptions, type FoundId } from './find-id.js';

/** What one call came to, in the terms the rows compare. */
export type Observed =
  | { readonly kind: 'succeeded'; readonly id: FoundId | undefined; readonly replayed: boolean }
  | { readonly kind: 'error'; readonly code: string; readonly message: string }
  /** No tool result: no answer in time, a lost connection, or (`definitive`) a JSON-RPC or HTTP refusal. */
  | {
      readonly kind: 'no_reply';
      readonly code: string;
      readonly message: string;
      readonly definitive: boolean;
    };

const MESSAGE_MAX = 200;

/** A tool error's code and message (Idem's `error` shape, or the text of any other server's error). */
export function observeReply(reply: ToolReply, ids: FindIdOptions): Observed {
  const { content, isError } = reply;
  if (isError) {
    const coded = replyError(content);
    const text =
      coded?.message ?? (typeof content.text === 'string' ? content.text : JSON.stringify(content));
    return {
      kind: 'error',
      code: coded === undefined ? 'tool_error' : errorLabel(coded),
      message: text.slice(0, MESSAGE_MAX),
    };
  }
  return { kind: 'succeeded', id: findId(reply, ids), replayed: content.replayed === true };
}

export function observe(step: AttemptResult, ids: FindIdOptions): Observed {
  if (step.kind === 'failure') {
    const { error, kind } = step.failure;
    return {
      kind: 'no_reply',
      code: errorLabel(error),
      message: error.message.slice(0, MESSAGE_MAX),
      definitive: kind === 'definitive',
    };
  }
  return observeReply(step.reply, ids);
}

/** One observation in a few words for the table: an id, `(no id)`, an error code or `no reply`. */
export function show(observed: Observed): string {
  switch (observed.kind) {
    case 'succeeded': {
      const id = observed.id === undefined ? '(no id)' : observed.id.value;
      return `${id}${observed.replayed ? ' (replayed)' : ''}`;
    }
    case 'error':
      return observed.code;
    case 'no_reply':
      return observed.definitive ? `refused (${observed.code})` : `no reply (${observed.code})`;
  }
}

/** An error with its message, for a row that stops on it. */
export function showFailure(observed: Observed): string {
  if (observed.kind === 'succeeded' || observed.message === observed.code) return show(observed);
  return `${observed.code}: ${observed.message}`;
}
