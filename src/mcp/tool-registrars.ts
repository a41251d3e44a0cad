import type { Executor } from '../executor/executor.js';
import type { IdemTool, ToolInput } from './idem-tool.js';
import {
  durableTool,
  idempotentTool,
  type DurableToolConfig,
  type IdempotentToolConfig,
} from './idempotent-tool.js';

/** The typed shortcuts `idem/mcp` and `idem/mcp-v1` offer, over one SDK's `McpServer`. */
export interface ToolRegistrars<Server, Registered> {
  /** Registers a mutating tool that keeps the retry contract (see `idempotentTool`). */
  readonly registerIdempotentTool: <App, Input extends ToolInput>(
    server: Server,
    executor: Executor<App>,
    config: IdempotentToolConfig<App, Input>,
  ) => Registered;
  /** Registers a long-running tool executed by a worker (see `durableTool`). */
  readonly registerDurableTool: <App, Input extends ToolInput>(
    server: Server,
    executor: Executor<App>,
    config: DurableToolConfig<Input>,
  ) => Registered;
}

/**
 * Builds the shortcuts on one SDK's `registerIdemTool`. It imports no SDK: `idem/mcp-v1` must
 * load with only `@modelcontextprotocol/sdk` 1.x installed, `idem/mcp` with only the v2 packages.
 */
export function toolRegistrars<Server, Registered>(
  register: (server: Server, tool: IdemTool) => Registered,
): ToolRegistrars<Server, Registered> {
  return {
    registerIdempotentTool: (server, executor, config) => register(server, idempotentTool(executor, config)),
    registerDurableTool: (server, executor, config) => register(server, durableTool(executor, config)),
  };
}
