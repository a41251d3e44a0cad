import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { IdemTool, ToolInput } from '../idem-tool.js';
import { principalFromAuthInfo, toolCallContext } from '../principal.js';
import { readTool, type ReadToolConfig } from '../read-tool.js';
import { noteRegisteredTool } from '../registered-tools.js';
import { toolRegistrars } from '../tool-registrars.js';

/** The second argument of an SDK 1.x tool callback. */
export type RequestExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** The authenticated principal of an SDK 1.x tool call: `extra.authInfo.extra.principal`. */
export function principalOf(extra: Pick<RequestExtra, 'authInfo'>): string | undefined {
  return principalFromAuthInfo(extra.authInfo);
}

/**
 * SDK 1.x takes only zod objects as input schemas. This one accepts any object (so that McpServer's
 * validation, which answers failures as uncoded text, never pre-empts Idem's `invalid_argument`)
 * and carries the tool's JSON Schema as zod metadata, which zod's `toJSONSchema` (the one the SDK
 * lists tools with) merges into its output: `tools/list` shows the tool's real fields.
 */
function advertisedZodObject(tool: IdemTool): z.ZodObject {
  const { $schema: _dialect, ...json } = tool.inputSchema['~standard'].jsonSchema.input({
    target: 'draft-07',
  });
  return z.looseObject({}).meta(json);
}

/** Registers an Idem tool on an SDK 1.x `McpServer` (`@modelcontextprotocol/sdk` 1.32 or later). */
export function registerIdemTool(server: McpServer, tool: IdemTool): RegisteredTool {
  const registered = server.registerTool(
    tool.name,
    {
      ...(tool.title === undefined ? {} : { title: tool.title }),
      description: tool.description,
      inputSchema: advertisedZodObject(tool),
      outputSchema: tool.outputSchema,
      annotations: { ...tool.annotations },
    },
    (args: unknown, extra: RequestExtra) =>
      tool.handle(args, toolCallContext(extra.authInfo, extra.signal, extra._meta)),
  );
  noteRegisteredTool(server, tool.name);
  return registered;
}

const registrars = toolRegistrars<McpServer, RegisteredTool>(registerIdemTool);

/** Registers a mutating tool that keeps the retry contract (see `idempotentTool`) on SDK 1.x. */
export const registerIdempotentTool = registrars.registerIdempotentTool;

/**
 * Registers a long-running tool executed by a worker (see `durableTool`) on SDK 1.x; warns
 * (`tool.status_tool_missing`) when its status tool is not registered on the same server.
 */
export const registerDurableTool = registrars.registerDurableTool;

/** Registers the status and cancel tools (see `operationTools`) on SDK 1.x, owner-only. */
export const registerOperationTools = registrars.registerOperationTools;

/** Registers a read-only tool (see `readTool`). */
export function registerReadTool<Input extends ToolInput>(
  server: McpServer,
  config: ReadToolConfig<Input>,
): RegisteredTool {
  return registerIdemTool(server, readTool(config));
}
