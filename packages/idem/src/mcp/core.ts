/** The SDK-independent half of `idem/mcp` and `idem/mcp-v1`: tools, schemas, results. */
export {
  idempotentTool,
  durableTool,
  workspaceField,
  idempotencyKeyField,
  type IdempotentToolConfig,
  type DurableToolConfig,
  type ToolArgs,
} from './idempotent-tool.js';
export type { FingerprintSelection } from '../core/fingerprint-selection.js';
export {
  operationTools,
  DEFAULT_CANCEL_TOOL,
  type OperationTools,
  type OperationToolsOptions,
} from './operation-tools.js';
export { operationView } from './operation-view.js';
export { readTool, type ReadToolConfig, type ReadContext } from './read-tool.js';
export { type ReadOperation } from './tool-call-log.js';
export {
  type IdemTool,
  type IdemToolAnnotations,
  type ToolCallContext,
  type ToolInput,
  type ToolShape,
  type ArgsOf,
} from './idem-tool.js';
export type {
  AdvertisedSchema,
  JsonStandardSchema,
  JsonSchemaOptions,
  StandardResult,
} from './advertised-schema.js';
export {
  idemResultSchema,
  errorContent,
  toolResult,
  outcomeResult,
  type IdemToolResult,
} from './tool-result.js';
export { idempotencyInstructions } from './tool-description.js';
export {
  followUpText,
  nextActionOf,
  DEFAULT_STATUS_TOOL,
  DEFAULT_OPERATOR_HINT,
  type FollowUpNames,
} from './follow-up.js';
export { principalFromAuthInfo, toolCallContext, type AuthInfoLike } from './principal.js';
export {
  attachAuthInfo,
  principalAuthInfo,
  type PrincipalAuthInfo,
  type MessageReceiver,
} from './attach-auth-info.js';
export {
  identityFromClaims,
  identityFromAuthInfo,
  grantedWorkspaces,
  authorizeByGrant,
  type IdemIdentity,
  type IdentityClaimNames,
} from './idem-identity.js';
export { prototypeKeyRefusal, type ToolCallResponse } from './prototype-key-refusal.js';
