/**
 * `idem/ai-sdk`: keys made in code for the Vercel AI SDK (`ai` 7, `@ai-sdk/mcp` 2). Loads `ai`, the
 * MCP SDK v2 client (`@modelcontextprotocol/client`) and better-sqlite3 (the intent journal).
 */
export { idemMcpTools, type IdemMcpTools, type IdemMcpToolsOptions } from './idem-mcp-tools.js';
export { callIdentity, type CallIdentity } from '../call-identity.js';
export type { KeyedCallsOptions } from '../keyed-calls.js';
