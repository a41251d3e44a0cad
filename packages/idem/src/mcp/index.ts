/**
 * `idem/mcp`: Idem's tools on the MCP TypeScript SDK v2 (`@modelcontextprotocol/server`, a peer
 * dependency), and the SDK-independent tools underneath for any other MCP framework.
 * For SDK 1.x (`@modelcontextprotocol/sdk`), use `idem/mcp-v1`.
 */
export {
  registerIdemTool,
  registerIdempotentTool,
  registerDurableTool,
  registerOperationTools,
  principalOf,
} from './register-idempotent-tool.js';
export { registerReadTool } from './register-read-tool.js';
export { jwtVerifier, DEFAULT_JWT_ALGORITHMS, type JwtVerifierOptions } from './oauth/jwt-verifier.js';
export * from './core.js';
