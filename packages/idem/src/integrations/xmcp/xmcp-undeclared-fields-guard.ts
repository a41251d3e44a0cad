import type { IdemTool } from '../../mcp/idem-tool.js';
import { toolCallContext, type AuthInfoLike } from '../../mcp/principal.js';
import type { ToolCallResponse } from '../../mcp/prototype-key-refusal.js';

/**
 * The parts of an xmcp HTTP request (an Express request) the guard reads. `body` is the JSON body
 * as xmcp's own `express.json()` parsed it, before any middleware of the app runs; the guard reads
 * that object and never the request stream, and never changes it.
 */
export interface XmcpGuardRequest {
  readonly method: string;
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  readonly body?: unknown;
  /** What an earlier middleware (your token check) put there: the principal of Idem's log line. */
  readonly auth?: AuthInfoLike;
}

/** The parts of an xmcp HTTP response (an Express response, a Node `ServerResponse`) the guard writes. */
export interface XmcpGuardResponse {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(chunk: string): unknown;
}

/**
 * An xmcp middleware (Express-style): it either answers the request itself or calls `next()`, and
 * never throws or rejects (an unexpected failure goes to `next(error)`).
 */
export type XmcpGuardMiddleware = (
  req: XmcpGuardRequest,
  res: XmcpGuardResponse,
  next: (error?: unknown) => void,
) => Promise<void>;

/**
 * The revisions xmcp 1.1.3 serves as plain JSON-RPC over Streamable HTTP (`MCP-Protocol-Version`).
 * A request naming another one (the 2026-07-28 revision, whose results carry `resultType`, or one
 * xmcp refuses) is left to xmcp.
 */
const GUARDED_REVISIONS: ReadonlySet<string> = new Set([
  '2024-10-07',
  '2024-11-05',
  '2025-03-26',
  '2025-06-18',
  '2025-11-25',
]);

/** The `_meta` key by which a request claims the 2026-07-28 revision in its body. */
const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';

/**
 * An xmcp middleware that keeps the promise xmcp 1.1 cannot: a `tools/call` with a field the tool
 * does not declare is refused with Idem's coded `invalid_argument` result, not run with the field
 * dropped. xmcp copies only the declared fields of the arguments before a tool handler runs, so the
 * guard looks at the body before xmcp does. For one JSON-RPC `tools/call` request (POST, accepting
 * JSON and SSE as the transport requires, a 2025-era revision) that names one of `tools` and whose
 * `arguments` object holds a key the tool's `argumentsSchema` does not declare (`"__proto__"`
 * included), it answers HTTP 200 with the JSON-RPC response whose result is the tool's own
 * `handle(arguments as sent)`: Idem's `invalid_argument` `CallToolResult` (`isError`, the stable code
 * in `structuredContent`, as every other integration answers it), refused while validating the
 * arguments, before the store or the tool's effect is reached, and logged as Idem logs a refusal
 * (with the principal of `req.auth`, when an earlier middleware set it). It answers only a call its
 * tool's schema refuses; it never runs an effect outside xmcp.
 *
 * xmcp runs every element of a JSON-RPC batch, so a batch holding such a call is refused as a whole
 * (HTTP 400, JSON-RPC Invalid Request, id null; nothing in it runs), as Idem's reference server
 * refuses a batch it cannot answer element by element. Everything else goes to `next()` untouched:
 * other batches, notifications, every other method, tools not in `tools`, calls whose fields are
 * all declared, arguments that are not an object, and requests xmcp answers itself (another HTTP
 * method, an `Accept` header without both types, another protocol revision). It reads `req.body` as
 * xmcp's `express.json()` left it and never the request stream, so a body an earlier middleware read
 * stays readable, and it changes nothing on `req`.
 *
 * Put it after your token check, in the array xmcp accepts as the default export of
 * `src/middleware.ts`: `export default [auth, xmcpUndeclaredFieldsGuard([createTicket])];`, so that
 * a caller without a valid token gets your 401 and not a refusal. Throws a `TypeError` when two
 * tools share a name.
 */
export function xmcpUndeclaredFieldsGuard(tools: readonly IdemTool[]): XmcpGuardMiddleware {
  const byName = new Map<string, IdemTool>();
  for (const tool of tools) {
    if (byName.has(tool.name)) {
      throw new TypeError(`xmcpUndeclaredFieldsGuard: two tools are named ${JSON.stringify(tool.name)}`);
    }
    byName.set(tool.name, tool);
  }
  return async (req, res, next) => {
    let answer: { status: number; body: unknown } | undefined;
    try {
      answer = await refusal(req, byName);
    } catch (error) {
      next(error);
      return;
    }
    if (answer === undefined) {
      next();
      return;
    }
    res.writeHead(answer.status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(answer.body));
  };
}

/** A `tools/call` the guard refuses: its id, its tool, its arguments as sent, the first undeclared key. */
interface RefusedCall {
  readonly id: string | number;
  readonly tool: IdemTool;
  readonly args: Record<string, unknown>;
  readonly key: string;
}

/** What the guard answers instead of handing the request on, or undefined. */
async function refusal(
  req: XmcpGuardRequest,
  tools: ReadonlyMap<string, IdemTool>,
): Promise<{ status: number; body: unknown } | undefined> {
  if (req.method.toUpperCase() !== 'POST' || !acceptsJsonAndSse(req.headers.accept)) return undefined;
  const version = header(req.headers['mcp-protocol-version']);
  if (version !== undefined && !GUARDED_REVISIONS.has(version)) return undefined;
  const body = req.body;
  if (Array.isArray(body)) {
    const at = body.findIndex((message) => refusedCall(message, tools) !== undefined);
    if (at === -1) return undefined;
    const { tool, key } = refusedCall(body[at], tools) as RefusedCall;
    const message = `Invalid Request: batch element ${at}: the arguments of ${tool.name} hold ${JSON.stringify(key)}, a field it does not declare; nothing in this batch was run`;
    return { status: 400, body: { jsonrpc: '2.0', error: { code: -32600, message }, id: null } };
  }
  const call = refusedCall(body, tools);
  if (call === undefined) return undefined;
  const result = await call.tool.handle(call.args, toolCallContext(req.auth, undefined));
  const response: ToolCallResponse = { jsonrpc: '2.0', id: call.id, result };
  return { status: 200, body: response };
}

/**
 * The `tools/call` request `message` is, when it names one of `tools` with an arguments object that
 * holds an undeclared key and that the tool's own schema refuses (so that `handle` stops at
 * validation); undefined for any other message.
 */
function refusedCall(message: unknown, tools: ReadonlyMap<string, IdemTool>): RefusedCall | undefined {
  if (!isObject(message) || message.jsonrpc !== '2.0' || message.method !== 'tools/call') return undefined;
  const id = message.id;
  if (typeof id !== 'string' && typeof id !== 'number') return undefined;
  const params = message.params;
  if (!isObject(params) || typeof params.name !== 'string') return undefined;
  if (isObject(params._meta) && Object.hasOwn(params._meta, PROTOCOL_VERSION_META)) return undefined;
  const tool = tools.get(params.name);
  const args = params.arguments;
  if (tool === undefined || !isObject(args)) return undefined;
  const declared = tool.argumentsSchema.shape;
  const key = Object.keys(args).find((name) => !Object.hasOwn(declared, name));
  if (key === undefined || tool.argumentsSchema.safeParse(args).success) return undefined;
  return { id, tool, args, key };
}

/** Whether an `Accept` header lists both `application/json` and `text/event-stream`. */
function acceptsJsonAndSse(accept: string | readonly string[] | undefined): boolean {
  const types = (header(accept) ?? '').split(',').map((part) => part.split(';')[0]?.trim().toLowerCase());
  return types.includes('application/json') && types.includes('text/event-stream');
}

function header(value: string | readonly string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : value?.join(', ');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
