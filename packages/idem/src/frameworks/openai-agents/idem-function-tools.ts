import { mcpToFunctionTool, tool, type FunctionTool, type MCPServer } from '@openai/agents';
import { clientLogger } from '../../client/client-logger.js';
import type { JournalIntent } from '../../client/intent-journal.js';
import type { IntentOutcome } from '../../client/intent-outcome.js';
import { KeyedCalls, type KeyedCallsOptions } from '../keyed-calls.js';
import { takesKey, withoutKey, type InputSchema } from '../key-schema.js';
import { modelResult } from '../model-result.js';

/** The JSON Schema form of a function tool's parameters (non-strict: the server's own schema). */
type ToolParameters = Extract<Parameters<typeof tool>[0]['parameters'], { additionalProperties: true }>;

/** How `idemFunctionTools` keys the tool calls: the journal, the run id, the retry policy (see KeyedCallsOptions). */
export type IdemFunctionToolsOptions = KeyedCallsOptions;

/** The OpenAI Agents function tools of one MCP server, keyed in code, and what a restarted agent resumes. */
export interface IdemFunctionTools {
  /** For `new Agent({ tools })` (instead of `mcpServers`): Idem's tools without the key argument. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the SDK's own tool list type
  readonly tools: FunctionTool<any, any, any>[];
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
 * The tools of a connected OpenAI Agents `MCPServer` (`MCPServerStreamableHttp`, `MCPServerStdio`,
 * …) as function tools with keys made in code. A tool whose input schema has `idempotency_key` is
 * shown to the model without it; its call's key is made from `runId` and the call id the Agents
 * runner gives the tool (`details.toolCall.callId`), recorded in the journal before the first send
 * and sent on every send of that call, through the server object's own `callToolResult` (or
 * `callTool`). The model gets the result as JSON: the tool's structured result, or `{ status:
 * 'failed' | 'in_progress' | 'outcome_unknown', next_action, … }`. Tools without the key argument
 * (the status tool among them) are the SDK's own `mcpToFunctionTool`, unchanged, and said once in an
 * `idem.agent.unkeyed_tools` log line.
 */
export async function idemFunctionTools(
  server: MCPServer,
  options: IdemFunctionToolsOptions,
): Promise<IdemFunctionTools> {
  const calls = new KeyedCalls(async (name, args, request) => {
    const callOptions = request.signal === undefined ? undefined : { signal: request.signal };
    if (server.callToolResult !== undefined) return server.callToolResult(name, args, null, callOptions);
    return { content: await server.callTool(name, args, null, callOptions) };
  }, options);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the SDK's own tool list type
  const tools: FunctionTool<any, any, any>[] = [];
  const keyed: string[] = [];
  const unkeyed: string[] = [];
  for (const mcpTool of await server.listTools()) {
    const name = mcpTool.name;
    if (!takesKey(mcpTool.inputSchema, calls.keyField)) {
      tools.push(mcpToFunctionTool(mcpTool, server, false));
      unkeyed.push(name);
      continue;
    }
    keyed.push(name);
    const schema = withoutKey(mcpTool.inputSchema as InputSchema, calls.keyField);
    tools.push(
      tool({
        name,
        description: mcpTool.description ?? '',
        parameters: {
          ...schema,
          type: 'object',
          required: schema.required ?? [],
          additionalProperties: true,
        } as ToolParameters,
        strict: false,
        // Errors are the outcome's business: an unexpected throw (a broken journal) reaches the run.
        errorFunction: null,
        execute: async (input, _context, details) => {
          const callId = details?.toolCall?.callId ?? '';
          const signal = details?.signal;
          const outcome = await calls.call(name, input, callId, signal === undefined ? {} : { signal });
          return JSON.stringify(modelResult(outcome, calls.operationTool));
        },
      }),
    );
  }
  if (unkeyed.length > 0) {
    clientLogger(options.logger).warn('idem.agent.unkeyed_tools', {
      framework: 'openai-agents',
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
