/**
 * `idem/mcp-v1`: Idem's tools on the MCP TypeScript SDK 1.x (`@modelcontextprotocol/sdk`, an
 * optional peer dependency) with zod 4 schemas. The same functions as `idem/mcp`, over the same
 * SDK-independent core; only the `McpServer` they register on differs.
 */
export {
  registerIdemTool,
  registerIdempotentTool,
  registerDurableTool,
  registerOperationTools,
  registerReadTool,
  principalOf,
  type RequestExtra,
} from './register-tool-v1.js';
export * from '../core.js';
