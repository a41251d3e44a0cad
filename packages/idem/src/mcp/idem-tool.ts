import { z } from 'zod';
import type { AdvertisedSchema } from './advertised-schema.js';
import type { IdemToolResult } from './tool-result.js';

/** A zod 4 raw shape, `{ title: z.string() }`. */
export type ToolShape = Record<string, z.ZodType>;

/** A tool's business arguments: a zod 4 object schema (preferred) or its raw shape. */
export type ToolInput = z.ZodObject | ToolShape;

/** The validated arguments a tool's code receives for `Input`. */
export type ArgsOf<Input extends ToolInput> = Input extends z.ZodType
  ? z.output<Input>
  : Input extends ToolShape
    ? z.output<z.ZodObject<Input>>
    : never;

/** What the transport knows about one call; Idem reads nothing else from it. */
export interface ToolCallContext {
  /** The authenticated principal (from the transport's authentication, never from arguments). */
  readonly principal: string | undefined;
  /**
   * The credential's own fields (`AuthInfo.extra`, e.g. the token's workspaces): passed to the
   * executor's `authorize` as `context.credentials` and to read tools, so that what a call may touch
   * is bounded by the credential it came with.
   */
  readonly credentials?: Readonly<Record<string, unknown>>;
  /** Aborted when the client cancels or goes away; stops waiting, never undoes a committed effect. */
  readonly signal?: AbortSignal;
  /**
   * The request's `params._meta`: Idem reads only its W3C `traceparent` and `tracestate`, which
   * the call's OpenTelemetry span continues.
   */
  readonly meta?: Readonly<Record<string, unknown>>;
}

/** MCP tool annotations as Idem sets them. */
export interface IdemToolAnnotations {
  readonly readOnlyHint: boolean;
  readonly idempotentHint: boolean;
  readonly destructiveHint?: boolean;
}

/**
 * A framework-neutral MCP tool: everything a server needs to list it, and one function that turns
 * a call (arguments, principal, signal) into a `CallToolResult`. `registerIdempotentTool` and its
 * kin hand it to an SDK `McpServer`; anything else (FastMCP's `addTool`, a hand-written
 * `tools/call` handler) can use the same fields. `handle` never throws for an expected outcome:
 * every error is an `isError` result with `structuredContent` and a stable code.
 */
export interface IdemTool {
  readonly name: string;
  readonly title?: string;
  /** The tool's description, with the retry contract appended for mutating tools. */
  readonly description: string;
  /**
   * The full argument schema (business fields, plus `workspace` and `idempotency_key` for mutating
   * tools) as a Standard Schema that lets every value through: give it to a framework that wants a
   * schema, so that its validation never pre-empts Idem's coded `invalid_argument`.
   */
  readonly inputSchema: AdvertisedSchema;
  /** The strict zod schema Idem validates arguments with (for a hand-written `tools/list`). */
  readonly argumentsSchema: z.ZodObject;
  /** One output schema that fits success and error results alike (zod 4, a Standard Schema). */
  readonly outputSchema: z.ZodObject;
  readonly annotations: IdemToolAnnotations;
  handle(args: unknown, context: ToolCallContext): Promise<IdemToolResult>;
}

/** The object schema of a tool's business arguments, whichever form they were given in. */
export function objectSchema(input: ToolInput): z.ZodObject {
  return input instanceof z.ZodObject ? input : z.object(input);
}
