import { readFileSync } from 'node:fs';
import { systemClock, type Clock } from '../core/clock.js';
import type { JsonObject } from '../core/json.js';
import { humanDuration } from '../mcp/tool-description.js';
import type { OperationRecord } from '../core/operation-record.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../core/retry-policy.js';
import type {
  DispatchOutcome,
  DurableHandler,
  HandlerCallContext,
  ReconcileOutcome,
  RecoveryMode,
  UnknownOutcomeContext,
} from '../operations/durable-handler.js';
import {
  DEFAULT_OUTPUT_LIMIT_BYTES,
  ensureOutputDir,
  OutputWriter,
  outputPaths,
  readOutput,
  writeJsonFile,
  type OutputSummary,
} from './command-output.js';
import { runProcess, type ProcessRun } from './command-process.js';
import type { CommandSet, CommandSpec } from './command-spec.js';

/** The operation (and tool) name of a command run. */
export const RUN_COMMAND = 'run_command';

/** Default wait between SIGTERM and SIGKILL. */
export const DEFAULT_KILL_GRACE_MS = 5000;

/** Default time an accepted command may wait for a worker before it fails unstarted. */
export const DEFAULT_START_WITHIN_MS = 60 * 60_000;

/** How a `CommandHandler` runs commands: the command set, the output directory, limits and grace. */
export interface CommandHandlerOptions {
  readonly commands: CommandSet;
  /** Where each run's output file and side file go (created if missing). */
  readonly outputDir: string;
  /** Bound of one run's kept output (head + tail). Default 1 MiB. */
  readonly outputLimitBytes?: number;
  /** Default 5 s. */
  readonly killGraceMs?: number;
  /** How long an accepted command may wait to be started. Default 1 h. */
  readonly startWithinMs?: number;
  /** Default the system clock. */
  readonly clock?: Clock;
  /** The environment the child's PATH, HOME and LANG come from. Default `process.env`. */
  readonly serverEnv?: Readonly<Record<string, string | undefined>>;
}

/**
 * Runs the named command of a `run_command` operation (args `{ command, workspace }`) once per
 * operation. Its recovery mode is `none` (a run interrupted by a crash ends `outcome_unknown` and
 * is never started again) unless the command is declared `rerunnable` (`key`: the next worker runs
 * it again). It watches for cancel requests while the process runs. Outcomes: exit 0 `succeeded`;
 * a non-zero exit, a signal, a timeout or a failed start `failed` (never retried); stopped on a
 * cancel request before it exited by itself `cancelled`. Each keeps its completion evidence
 * (`commandEvidence`) as the stored result, and the output in `outputDir`.
 */
export class CommandHandler implements DurableHandler {
  readonly mode: RecoveryMode = 'none';
  readonly watchesCancel = true;
  readonly policy: RetryPolicy;
  readonly commands: CommandSet;
  readonly outputDir: string;
  readonly #limit: number;
  readonly #grace: number;
  readonly #clock: Clock;
  readonly #serverEnv: Readonly<Record<string, string | undefined>> | undefined;

  constructor(options: CommandHandlerOptions) {
    this.commands = options.commands;
    this.outputDir = options.outputDir;
    this.#limit = options.outputLimitBytes ?? DEFAULT_OUTPUT_LIMIT_BYTES;
    this.#grace = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
    this.#clock = options.clock ?? systemClock;
    this.#serverEnv = options.serverEnv;
    this.policy = commandPolicy(options.commands, options.startWithinMs ?? DEFAULT_START_WITHIN_MS);
  }

  modeFor(operation: OperationRecord): RecoveryMode {
    return this.#spec(operation)?.rerunnable === true ? 'key' : 'none';
  }

  async dispatch(operation: OperationRecord, context: HandlerCallContext): Promise<DispatchOutcome> {
    const spec = this.#spec(operation);
    if (spec === undefined) {
      return {
        kind: 'failed',
        code: 'invalid_argument',
        reason: 'undeclared_command',
        message: `command ${JSON.stringify(commandName(operation))} is not declared on this worker; nothing was run`,
      };
    }
    const clock = this.#clock;
    const paths = outputPaths(this.outputDir, operation.operationId);
    const startedAt = clock.now();
    const base = {
      operation_id: operation.operationId,
      command: spec.name,
      argv: [...spec.argv],
      cwd: spec.cwd,
      started_at: new Date(startedAt).toISOString(),
      attempt: operation.attemptCount,
    };
    let output: OutputWriter;
    try {
      ensureOutputDir(this.outputDir);
      writeJsonFile(paths.meta, { ...base, state: 'starting' });
      output = new OutputWriter(paths.out, this.#limit);
    } catch (error) {
      // Before any process: definite, and nothing ran.
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      return {
        kind: 'failed',
        code: 'internal',
        reason: `output ${code}`,
        message: `cannot keep the output of command ${JSON.stringify(spec.name)} in ${this.outputDir} (${code}); nothing was run`,
      };
    }
    let run: ProcessRun;
    let summary: OutputSummary;
    try {
      run = await runProcess({
        spec,
        clock,
        killGraceMs: this.#grace,
        onOutput: (chunk) => output.append(chunk),
        onSpawn: (pid) => writeJsonFile(paths.meta, { ...base, state: 'running', pid }),
        ...(context.cancelSignal === undefined ? {} : { cancelSignal: context.cancelSignal }),
        leaseSignal: context.signal,
        ...(this.#serverEnv === undefined ? {} : { serverEnv: this.#serverEnv }),
      });
    } finally {
      // Whatever happens, the output written so far is flushed and the file closed.
      summary = output.finish();
    }
    const evidence = commandEvidence(spec, run, summary, startedAt, clock.now());
    writeJsonFile(paths.meta, {
      ...base,
      state: 'ended',
      ...(run.pid === undefined ? {} : { pid: run.pid }),
      evidence,
    });
    return outcomeOf(operation, spec, run, evidence);
  }

  /** Nothing to look up: a process leaves no reference to search for. */
  async reconcile(): Promise<ReconcileOutcome> {
    return { kind: 'unsupported' };
  }

  nextAction(operation: OperationRecord, context: UnknownOutcomeContext): string {
    const name = commandName(operation);
    const spec = this.#spec(operation);
    const what =
      spec === undefined
        ? `command ${JSON.stringify(name)}`
        : `command ${JSON.stringify(name)} (argv ${JSON.stringify(spec.argv)} in ${spec.cwd})`;
    const started = this.#meta(operation.operationId);
    const pid = typeof started?.pid === 'number' ? ` as process group ${started.pid}` : '';
    const printed = readOutput(outputPaths(this.outputDir, operation.operationId).out, 0, 0);
    const bytes = printed === undefined ? '' : `; it had printed ${printed.totalBytes} bytes`;
    return (
      `The ${what} was started${pid} between ${new Date(context.from).toISOString()} and ` +
      `${new Date(context.to).toISOString()}, and its worker stopped before it ended, so whether it ` +
      `completed is unknown${bytes}. Read its output with read_command_output (operation_id ` +
      `${operation.operationId}), check whether that process group is still running and what the ` +
      `command changes, then have an operator resolve this operation (idem ops resolve) as succeeded ` +
      `or failed. It is not run again automatically; do not run it again with a new idempotency_key ` +
      `before that.`
    );
  }

  /** The success fields of an operator's resolution: the command's name. */
  successFields(operation: OperationRecord): JsonObject {
    return { command: commandName(operation), resolved_without_evidence: true };
  }

  #spec(operation: OperationRecord): CommandSpec | undefined {
    return this.commands.get(commandName(operation));
  }

  #meta(operationId: string): Record<string, unknown> | undefined {
    try {
      return JSON.parse(readFileSync(outputPaths(this.outputDir, operationId).meta, 'utf8')) as Record<
        string,
        unknown
      >;
    } catch {
      return undefined;
    }
  }
}

/**
 * The completion evidence kept in the ledger with the final record: how the process ended
 * (`exit_code`, or the `signal` that ended it), `duration_ms`, `output_bytes` and `output_sha256`
 * over every byte it wrote, `output_kept_bytes` in the file, `last_lines`, and `stopped_by` when
 * Idem stopped it (cancel, timeout, lease_lost).
 */
export function commandEvidence(
  spec: CommandSpec,
  run: ProcessRun,
  output: OutputSummary,
  startedAt: number,
  endedAt: number,
): JsonObject {
  return {
    command: spec.name,
    exit_code: run.exitCode,
    signal: run.signal,
    ...(run.pid === undefined ? {} : { pid: run.pid }),
    ...(run.spawnError === undefined ? {} : { spawn_error: run.spawnError }),
    ...(run.stoppedBy === undefined ? {} : { stopped_by: run.stoppedBy, sigkill: run.escalated }),
    duration_ms: run.durationMs,
    started_at: new Date(startedAt).toISOString(),
    ended_at: new Date(endedAt).toISOString(),
    output_bytes: output.bytes,
    output_sha256: output.sha256,
    output_kept_bytes: output.keptBytes,
    last_lines: output.lastLines,
  };
}

function outcomeOf(
  operation: OperationRecord,
  spec: CommandSpec,
  run: ProcessRun,
  evidence: JsonObject,
): DispatchOutcome {
  const name = JSON.stringify(spec.name);
  if (run.spawnError !== undefined) {
    return {
      kind: 'failed',
      code: 'internal',
      reason: `spawn ${run.spawnError}`,
      message: `command ${name} could not be started (${run.spawnError}); nothing was run`,
      evidence,
    };
  }
  if (run.stoppedBy === 'cancel') {
    // What a replay of the call and get_operation show: not "nothing was done".
    return {
      kind: 'cancelled',
      evidence: {
        status: 'cancelled',
        operation_id: operation.operationId,
        next_action:
          `The process was stopped on your cancel request before it ended by itself; it may have done ` +
          `part of its work (see last_lines, or read_command_output). Check before running it again ` +
          `with a new idempotency_key.`,
        ...evidence,
      },
    };
  }
  if (run.stoppedBy === 'timeout') {
    return {
      kind: 'failed',
      code: 'internal',
      reason: 'timeout',
      message: `command ${name} timed out after ${humanDuration(spec.timeoutMs)} and was killed (${run.escalated ? 'SIGTERM, then SIGKILL' : 'SIGTERM'}); what it did before is in its output`,
      evidence,
    };
  }
  if (run.exitCode === 0 && run.signal === null) {
    return { kind: 'created', resourceId: `run_${operation.operationId}`, fields: evidence };
  }
  const how = run.signal === null ? `exited with code ${run.exitCode}` : `was ended by ${run.signal}`;
  return {
    kind: 'failed',
    code: 'internal',
    reason: run.signal === null ? `exit ${run.exitCode}` : `signal ${run.signal}`,
    message: `command ${name} ${how}; it is not retried. Its last lines: ${tailText(evidence)}`,
    evidence,
  };
}

/** A retry policy for commands: start within `startWithinMs`, then run up to the longest timeout. */
export function commandPolicy(commands: CommandSet, startWithinMs: number): RetryPolicy {
  let longest = 0;
  for (const spec of commands.values()) longest = Math.max(longest, spec.timeoutMs);
  return {
    ...DEFAULT_RETRY_POLICY,
    totalMs: startWithinMs + longest,
    attemptTimeoutMs: longest,
    maxAttempts: 3,
  };
}

function commandName(operation: OperationRecord): string {
  const name = operation.args?.command;
  return typeof name === 'string' ? name : '';
}

function tailText(evidence: JsonObject): string {
  const lines = Array.isArray(evidence.last_lines) ? (evidence.last_lines as string[]) : [];
  const text = lines.slice(-5).join(' | ');
  return text === '' ? '(no output)' : text.length > 500 ? `…${text.slice(-500)}` : text;
}
