import type { McpServer, RegisteredTool, ServerContext } from '@modelcontextprotocol/server';
import { withCachedJsonSchema } from './advertised-schema.js';
import type { IdemTool } from './idem-tool.js';
import { principalFromAuthInfo, toolCallContext } from './principal.js';
import { noteRegisteredTool } from './registered-tools.js';
import { toolRegistrars } from './tool-registrars.js';

/** The authenticated principal of an SDK v2 tool call: `ctx.http?.authInfo.extra.principal`. */
export function principalOf(ctx: Pick<ServerContext, 'http'>): string | undefined {
  return principalFromAuthInfo(ctx.http?.authInfo);
}

/**
 * Registers an Idem tool on an SDK v2 `McpServer` (`@modelcontextprotocol/server`). Its input
 * schema lets every value through McpServer's own validation, which would answer failures as
 * uncoded text; the tool validates and answers `invalid_argument` itself. Every result, success
 * or error, is built by the tool with `structuredContent` that fits the declared output schema.
 */
export function registerIdemTool(server: McpServer, tool: IdemTool): RegisteredTool {
  const registered = server.registerTool(
    tool.name,
    {
      ...(tool.title === undefined ? {} : { title: tool.title }),
      description: tool.description,
      inputSchema: tool.inputSchema,
      outputSchema: withCachedJsonSchema(tool.outputSchema),
      annotations: { ...tool.annotations },
    },
    (args, ctx) =>
      tool.handle(args, toolCallContext(ctx.http?.authInfo, ctx.mcpReq.signal, ctx.mcpReq._meta)),
  );
  noteRegisteredTool(server, tool.name);
  return registered;
}

const registrars = toolRegistrars<McpServer, RegisteredTool>(registerIdemTool);

/** Registers a mutating tool that keeps the retry contract (see `idempotentTool`) on SDK v2. */
export const registerIdempotentTool = registrars.registerIdempotentTool;

/**
 * Registers a long-running tool executed by a worker (see `durableTool`) on SDK v2; warns
 * (`tool.status_tool_missing`) when its status tool is not registered on the same server.
 */
export const registerDurableTool = registrars.registerDurableTool;

/** Registers the status and cancel tools (see `operationTools`) on SDK v2, owner-only. */
export const registerOperationTools = registrars.registerOperationTools;
