import { IdemError } from '../core/errors.js';
import { errorContent, toolResult, type IdemToolResult } from './tool-result.js';

/** A JSON-RPC response carrying a tool result. */
export interface ToolCallResponse {
  readonly jsonrpc: '2.0';
  readonly id: string | number;
  readonly result: IdemToolResult;
}

/**
 * The answer to a raw `tools/call` request whose arguments hold a `"__proto__"` key anywhere, or
 * undefined for any other message. `JSON.parse` keeps such a key as an own property, but both MCP
 * SDK lines rebuild `params.arguments` with zod before a tool runs, and that assignment sets the
 * rebuilt object's prototype instead of a field: the key would vanish (and an object value's fields
 * would be inherited), so the call would run as if it had not been sent. A server that parses the
 * message itself calls this first and sends the answer instead of handing the message on: the
 * same `invalid_argument` tool result, in Idem's result shape, as for any other unknown key.
 */
export function prototypeKeyRefusal(message: unknown): ToolCallResponse | undefined {
  if (!isObject(message) || message.method !== 'tools/call') return undefined;
  const id = message.id;
  if (typeof id !== 'string' && typeof id !== 'number') return undefined;
  const params = message.params;
  if (!isObject(params) || !isObject(params.arguments)) return undefined;
  const holder = prototypeKeyHolder(params.arguments);
  if (holder === undefined) return undefined;
  const where = holder.length === 0 ? 'arguments' : holder.join('.');
  const error = new IdemError(
    'invalid_argument',
    `invalid arguments: ${where}: Unrecognized key: "__proto__"`,
    {
      nextAction: 'Fix the arguments and call again; a rejected call changed nothing.',
    },
  );
  return { jsonrpc: '2.0', id, result: toolResult(errorContent(error), true) };
}

/**
 * The path of the first object (depth first) that has an own `__proto__` key, [] for the root.
 * Iterative, with each node pointing at its parent, so that a deeply nested body can neither
 * exhaust the stack nor cost more than one visit per value.
 */
export function prototypeKeyHolder(value: unknown): string[] | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const pending: Visit[] = [{ value, key: '', parent: undefined }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const current = next.value;
    if (!Array.isArray(current) && Object.hasOwn(current as object, '__proto__')) return pathOf(next);
    const entries = Object.entries(current as object);
    for (let i = entries.length - 1; i >= 0; i -= 1) {
      const [key, item] = entries[i] as [string, unknown];
      if (typeof item === 'object' && item !== null) pending.push({ value: item, key, parent: next });
    }
  }
  return undefined;
}

interface Visit {
  readonly value: unknown;
  readonly key: string;
  readonly parent: Visit | undefined;
}

function pathOf(visit: Visit): string[] {
  const path: string[] = [];
  for (let at: Visit | undefined = visit; at?.parent !== undefined; at = at.parent) path.push(at.key);
  return path.reverse();
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
