import type { Executor } from '../executor/executor.js';
import { DEFAULT_STATUS_TOOL } from './follow-up.js';
import type { IdemTool, ToolInput } from './idem-tool.js';
import {
  durableTool,
  idempotentTool,
  type DurableToolConfig,
  type IdempotentToolConfig,
} from './idempotent-tool.js';
import { operationTools, type OperationToolsOptions } from './operation-tools.js';
import { hasRegisteredTool } from './registered-tools.js';

/** The typed shortcuts `idem/mcp` and `idem/mcp-v1` offer, over one SDK's `McpServer`. */
export interface ToolRegistrars<Server, Registered> {
  /** Registers a mutating tool that keeps the retry contract (see `idempotentTool`). */
  readonly registerIdempotentTool: <App, Input extends ToolInput>(
    server: Server,
    executor: Executor<App>,
    config: IdempotentToolConfig<App, Input>,
  ) => Registered;
  /**
   * Registers a long-running tool executed by a worker (see `durableTool`). Its results send the
   * caller to the status tool `config.statusTool` (default `get_operation`): if no tool of that
   * name was registered on the same server by the end of the current tick (synchronous
   * registrations), the executor's logger gets the warning `tool.status_tool_missing` (fields
   * `tool`, `status_tool`); register it with `registerOperationTools`.
   */
  readonly registerDurableTool: <App, Input extends ToolInput>(
    server: Server,
    executor: Executor<App>,
    config: DurableToolConfig<Input>,
  ) => Registered;
  /**
   * Registers the status and cancel tools (see `operationTools`): `get_operation` and
   * `cancel_operation` unless renamed, owner-only, with output schemas that every answer fits.
   * Give durable tools the same `statusTool` name.
   */
  readonly registerOperationTools: <App>(
    server: Server,
    executor: Executor<App>,
    options?: OperationToolsOptions,
  ) => { readonly statusTool: Registered; readonly cancelTool: Registered };
}

/**
 * Builds the shortcuts on one SDK's `registerIdemTool`. It imports no SDK: `idem/mcp-v1` must
 * load with only `@modelcontextprotocol/sdk` 1.x installed, `idem/mcp` with only the v2 packages.
 */
export function toolRegistrars<Server extends object, Registered>(
  register: (server: Server, tool: IdemTool) => Registered,
): ToolRegistrars<Server, Registered> {
  return {
    registerIdempotentTool: (server, executor, config) => register(server, idempotentTool(executor, config)),
    registerDurableTool: (server, executor, config) => {
      const registered = register(server, durableTool(executor, config));
      const statusTool = config.statusTool ?? DEFAULT_STATUS_TOOL;
      // The check waits for the rest of the server's synchronous registrations.
      setImmediate(() => {
        if (hasRegisteredTool(server, statusTool)) return;
        executor.logger.warn('tool.status_tool_missing', { tool: config.name, status_tool: statusTool });
      }).unref();
      return registered;
    },
    registerOperationTools: (server, executor, options) => {
      const tools = operationTools(executor, options);
      return {
        statusTool: register(server, tools.statusTool),
        cancelTool: register(server, tools.cancelTool),
      };
    },
  };
}
