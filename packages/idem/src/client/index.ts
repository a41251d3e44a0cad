/**
 * `idem/client`: the agent side. A retry-safe MCP client with a durable intent journal.
 * Loads the MCP SDK v2 client (`@modelcontextprotocol/client`) and better-sqlite3; works against
 * servers on SDK v2 and 1.x.
 */
export { IdemClient, type IdemClientOptions, type CallOptions, type ResumeOptions } from './idem-client.js';
export type { ClientLoggerOption } from './client-logger.js';
export {
  IntentJournal,
  type IntentJournalOptions,
  type IntentStatus,
  type JournalIntent,
  type IntentHandoff,
  type NewIntent,
} from './intent-journal.js';
export type { IntentOutcome, UnknownReason } from './intent-outcome.js';
export type { ToolError, ToolReply } from './tool-reply.js';
export { readToolReply, replyError, errorLabel } from './tool-reply.js';
export { credentialsRefusal, type CredentialsRefusal } from './credentials-refusal.js';
export {
  TOOL_ERROR_CODES,
  CLIENT_FAILURE_CODES,
  isToolErrorCode,
  type ToolErrorCode,
} from './tool-error-codes.js';
export {
  connectTarget,
  type McpTarget,
  type HttpTarget,
  type StdioTarget,
  type ConnectTargetOptions,
  type ProtocolChoice,
  type McpClient,
  type McpTransport,
} from './connect-target.js';
export { callWithTimeout, type AttemptResult } from './call-with-timeout.js';
export { classifyFailure, type FailureKind } from './classify-failure.js';
