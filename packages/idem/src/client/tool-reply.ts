import { isToolErrorCode, type ToolErrorCode } from './tool-error-codes.js';

/**
 * What a tool call answered, read the same way for Idem servers and for any other MCP server:
 * the `structuredContent` object, or else the first text block parsed as a JSON object, or else
 * the text itself as `{ text }`; beside it, the URIs of any resource links or embedded resources.
 * Nothing here depends on the SDK's output-schema validation.
 */
export interface ToolReply {
  readonly isError: boolean;
  readonly content: Record<string, unknown>;
  /** The URIs of `resource_link` blocks and embedded `resource` blocks, in order (absent when none). */
  readonly resourceUris?: readonly string[];
}

/** A coded error as a tool reported it (`error` in Idem's result shape) or as the client saw it. */
export interface ToolError {
  /** One of TOOL_ERROR_CODES: Idem's (`payload_conflict`, `busy`, …) or the client's (`timeout`, …). */
  readonly code: ToolErrorCode;
  readonly message: string;
  readonly retryable: boolean;
  readonly retryAfterMs?: number;
  /** For `http_error`: the HTTP status. */
  readonly httpStatus?: number;
  /** For `tool_error`: the code the server sent, when it is not one of TOOL_ERROR_CODES. */
  readonly serverCode?: string;
}

/** A code for a log line or a table: the server's own code, `http_<status>`, or `code` itself. */
export function errorLabel(error: ToolError): string {
  if (error.serverCode !== undefined) return error.serverCode;
  if (error.code === 'http_error' && error.httpStatus !== undefined) return `http_${error.httpStatus}`;
  return error.code;
}

/**
 * Reads a `tools/call` result of any shape: `structuredContent` when it is an object, else the first
 * text block parsed as JSON when it is an object, else the text blocks joined as `{ text }`; `isError`
 * as sent, and the URIs of any resource links. Never throws.
 */
export function readToolReply(result: unknown): ToolReply {
  const raw = (typeof result === 'object' && result !== null ? result : {}) as {
    isError?: unknown;
    structuredContent?: unknown;
    content?: unknown;
  };
  const isError = raw.isError === true;
  const uris = resourceUris(raw.content);
  const links = uris.length === 0 ? {} : { resourceUris: uris };
  if (isPlainObject(raw.structuredContent)) return { isError, content: raw.structuredContent, ...links };
  const texts = Array.isArray(raw.content)
    ? raw.content
        .filter((block): block is { type: 'text'; text: string } => {
          const b = block as { type?: unknown; text?: unknown };
          return b?.type === 'text' && typeof b.text === 'string';
        })
        .map((block) => block.text)
    : [];
  const first = texts[0];
  if (first !== undefined) {
    try {
      const parsed: unknown = JSON.parse(first);
      if (isPlainObject(parsed)) return { isError, content: parsed, ...links };
    } catch {
      // not JSON: fall through to plain text
    }
  }
  return { isError, content: { text: texts.join('\n') }, ...links };
}

function resourceUris(content: unknown): string[] {
  if (!Array.isArray(content)) return [];
  return content.flatMap((block: unknown) => {
    if (!isPlainObject(block)) return [];
    if (block.type === 'resource_link' && typeof block.uri === 'string') return [block.uri];
    if (
      block.type === 'resource' &&
      isPlainObject(block.resource) &&
      typeof block.resource.uri === 'string'
    ) {
      return [block.resource.uri];
    }
    return [];
  });
}

/** The coded error in a reply, when it has one in Idem's shape. */
export function replyError(content: Record<string, unknown>): ToolError | undefined {
  const error = content.error;
  if (!isPlainObject(error) || typeof error.code !== 'string') return undefined;
  const retryAfter = error.retry_after_ms;
  const known = isToolErrorCode(error.code);
  return {
    code: known ? (error.code as ToolErrorCode) : 'tool_error',
    ...(known ? {} : { serverCode: error.code }),
    message: typeof error.message === 'string' ? error.message : error.code,
    retryable: error.retryable === true,
    ...(typeof retryAfter === 'number' && Number.isFinite(retryAfter) && retryAfter >= 0
      ? { retryAfterMs: retryAfter }
      : {}),
  };
}

/** A string field of a reply, or undefined. */
export function stringField(content: Record<string, unknown>, name: string): string | undefined {
  const value = content[name];
  return typeof value === 'string' ? value : undefined;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
