/**
 * `idem/openai-agents`: keys made in code for OpenAI Agents JS (`@openai/agents` 0.20). Loads
 * `@openai/agents`, the MCP SDK v2 client (`@modelcontextprotocol/client`) and better-sqlite3.
 */
export {
  idemFunctionTools,
  type IdemFunctionTools,
  type IdemFunctionToolsOptions,
} from './idem-function-tools.js';
export { callIdentity, type CallIdentity } from '../call-identity.js';
export type { KeyedCallsOptions } from '../keyed-calls.js';
