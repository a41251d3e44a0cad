export {
  registerIdempotentTool,
  workspaceField,
  idempotencyKeyField,
  type IdempotentToolConfig,
} from './register-idempotent-tool.js';
export { idemResultShape, idemResultSchema, errorContent, toolResult, outcomeResult } from './tool-result.js';
export { idempotencyInstructions, humanDuration } from './tool-description.js';
export { principalOf, type RequestExtra } from './principal.js';
export { attachAuthInfo, principalAuthInfo } from './attach-auth-info.js';
export { registerReadTool, type ReadToolConfig } from './register-read-tool.js';
export { lenientObject } from './lenient-object.js';
