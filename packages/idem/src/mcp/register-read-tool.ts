import type { McpServer, RegisteredTool } from '@modelcontextprotocol/server';
import type { ToolInput } from './idem-tool.js';
import { readTool, type ReadToolConfig } from './read-tool.js';
import { registerIdemTool } from './register-idempotent-tool.js';

/** Registers a read-only tool (see `readTool`) on an SDK v2 `McpServer`. */
export function registerReadTool<Input extends ToolInput>(
  server: McpServer,
  config: ReadToolConfig<Input>,
): RegisteredTool {
  return registerIdemTool(server, readTool(config));
}
