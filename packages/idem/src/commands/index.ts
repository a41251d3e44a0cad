/**
 * `idem/commands`: retry-safe command execution. A named command runs once per idempotency key as
 * a durable operation (`CommandHandler` in a Worker, `run_command` on the MCP server), its output
 * is kept bounded in a file (removed with the receipt: `pruneCommandOutput`), and its completion
 * evidence in the ledger.
 */
export {
  CommandHandler,
  commandEvidence,
  commandPolicy,
  RUN_COMMAND,
  DEFAULT_KILL_GRACE_MS,
  DEFAULT_START_WITHIN_MS,
  type CommandHandlerOptions,
} from './command-handler.js';
export {
  commandTools,
  READ_COMMAND_OUTPUT,
  DEFAULT_READ_LIMIT,
  MAX_READ_LIMIT,
  type CommandToolsOptions,
} from './command-tools.js';
export { registerCommandTools } from './register-command-tools.js';
export {
  parseCommands,
  loadCommandsFile,
  childEnvironment,
  INHERITED_ENV,
  DEFAULT_COMMAND_TIMEOUT_MS,
  type CommandSpec,
  type CommandSet,
} from './command-spec.js';
export {
  readOutput,
  outputPaths,
  OutputWriter,
  DEFAULT_OUTPUT_LIMIT_BYTES,
  MIN_OUTPUT_LIMIT_BYTES,
  type OutputRead,
  type OutputSummary,
} from './command-output.js';
export { pruneCommandOutput, type PruneResult } from './prune-command-output.js';
export { runProcess, type ProcessRun, type RunProcessOptions, type StopCause } from './command-process.js';
export { startCommandWorkers, type CommandWorkersOptions } from './command-workers.js';
