import type { MCPClient } from '@ai-sdk/mcp';
import { dynamicTool, jsonSchema, type JSONSchema7, type ToolSet } from 'ai';
import { clientLogger } from '../../client/client-logger.js';
import type { JournalIntent } from '../../client/intent-journal.js';
import type { IntentOutcome } from '../../client/intent-outcome.js';
import { KeyedCalls, type KeyedCallsOptions } from '../keyed-calls.js';
import { takesKey, withoutKey, type InputSchema } from '../key-schema.js';
import { modelResult } from '../model-result.js';

/** How `idemMcpTools` keys the tool calls: the journal, the run id, the retry policy (see KeyedCallsOptions). */
export type IdemMcpToolsOptions = KeyedCallsOptions;

/** The AI SDK tools of one MCP server, keyed in code, and what a restarted agent resumes. */
export interface IdemMcpTools {
  /** For `generateText`/`streamText`/`Agent`: every tool of the server; Idem's without the key argument. */
  readonly tools: ToolSet;
  /** The tools whose calls are keyed (their schema had the key argument). */
  readonly keyed: readonly string[];
  /** The tools sent unchanged (no key argument: not Idem's, nor behind `idem proxy`). */
  readonly unkeyed: readonly string[];
  /** The calls of this run the journal holds unsettled (the agent died, or the outcome is unknown). */
  unsettled(): JournalIntent[];
  /** Resumes one of them with its own key: what the model gets for it, and the typed outcome. */
  resume(
    intentId: string,
    options?: { signal?: AbortSignal },
  ): Promise<{ output: Record<string, unknown>; outcome: IntentOutcome }>;
}

/**
 * The tools of the MCP server behind `mcp` (the AI SDK's `createMCPClient`) for an AI SDK agent,
 * with keys made in code. For each tool whose input schema has `idempotency_key`, the model sees
 * the schema without it; on `execute(args, { toolCallId })` the adapter makes the key from `runId`
 * and `toolCallId`, records it in the journal before the first send and sends it on every attempt
 * (its own retries of a lost answer within the deadline, the AI SDK client's `maxRetries` resends,
 * the same call re-run after the agent died). The model gets the tool's structured result, or
 * `{ status: 'failed' | 'in_progress' | 'outcome_unknown', next_action, … }`; the status tool
 * (`get_operation`) and the other tools without the key argument are the SDK's own, unchanged, and
 * said once in an `idem.agent.unkeyed_tools` log line.
 */
export async function idemMcpTools(
  mcp: Pick<MCPClient, 'listTools' | 'toolsFromDefinitions' | 'callTool'>,
  options: IdemMcpToolsOptions,
): Promise<IdemMcpTools> {
  const calls = new KeyedCalls(
    (name, args, request) =>
      mcp.callTool({
        name,
        arguments: args,
        options: {
          ...(request.signal === undefined ? {} : { signal: request.signal }),
          ...(request.timeout === undefined ? {} : { timeout: request.timeout }),
        },
      }),
    options,
  );
  let listed = await mcp.listTools();
  const definitions = [...listed.tools];
  while (listed.nextCursor !== undefined && listed.nextCursor !== null) {
    listed = await mcp.listTools({ params: { cursor: listed.nextCursor } });
    definitions.push(...listed.tools);
  }
  const own = mcp.toolsFromDefinitions({ tools: definitions }) as ToolSet;
  const tools: ToolSet = {};
  const keyed: string[] = [];
  const unkeyed: string[] = [];
  for (const definition of definitions) {
    const name = definition.name;
    const sdkTool = own[name];
    if (sdkTool === undefined) continue; // the SDK left it out (an invalid definition)
    if (!takesKey(definition.inputSchema, calls.keyField)) {
      tools[name] = sdkTool;
      unkeyed.push(name);
      continue;
    }
    keyed.push(name);
    tools[name] = dynamicTool({
      description: definition.description ?? '',
      ...(definition.title === undefined ? {} : { title: definition.title }),
      inputSchema: jsonSchema({
        ...withoutKey(definition.inputSchema as InputSchema, calls.keyField),
        additionalProperties: false,
      } as JSONSchema7),
      execute: async (input, { toolCallId, abortSignal }) => {
        const outcome = await calls.call(name, input, toolCallId, { signal: abortSignal });
        return modelResult(outcome, calls.operationTool);
      },
    });
  }
  if (unkeyed.length > 0) {
    clientLogger(options.logger).warn('idem.agent.unkeyed_tools', {
      framework: 'ai-sdk',
      tools: unkeyed.join(','),
      keyed: keyed.length,
      message: `these tools take no ${calls.keyField}: they are sent unchanged (a read is fine; a retried write may act twice)`,
    });
  }
  return {
    tools,
    keyed,
    unkeyed,
    unsettled: () => calls.unsettled(),
    resume: async (intentId, resumeOptions = {}) => {
      const outcome = await calls.resumeIntent(intentId, resumeOptions);
      return { output: modelResult(outcome, calls.operationTool), outcome };
    },
  };
}
