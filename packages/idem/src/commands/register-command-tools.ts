import type { McpServer, RegisteredTool } from '@modelcontextprotocol/server';
import { registerIdemTool } from '../mcp/register-idempotent-tool.js';
import { commandTools, type CommandToolsOptions } from './command-tools.js';

/**
 * Registers `run_command` and `read_command_output` (see `commandTools`) on an SDK v2 McpServer.
 * Run a Worker with `{ run_command: options.handler }` (among its handlers) against the same store,
 * or nothing will run the commands; register get_operation and cancel_operation as you see fit.
 */
export function registerCommandTools<App>(
  server: McpServer,
  options: CommandToolsOptions<App>,
): RegisteredTool[] {
  return commandTools(options).map((tool) => registerIdemTool(server, tool));
}
