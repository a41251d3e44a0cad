/**
 * `idem/langchain`: keys made in code for LangChain.js (`@langchain/mcp-adapters` 1.1 with
 * `@langchain/core` 1). Loads `@langchain/core`, `@langchain/mcp-adapters`, the MCP SDK v2 client
 * (`@modelcontextprotocol/client`, for its error classes) and better-sqlite3 (the intent journal).
 */
export {
  idemLangChainTools,
  type IdemLangChainTools,
  type IdemLangChainToolsOptions,
  type LangChainMcpClient,
} from './idem-langchain-tools.js';
export { callIdentity, type CallIdentity } from '../call-identity.js';
export type { KeyedCallsOptions } from '../keyed-calls.js';
