import { DynamicStructuredTool, type StructuredToolInterface } from '@langchain/core/tools';
import { loadMcpTools } from '@langchain/mcp-adapters';
import { clientLogger } from '../../client/client-logger.js';
import type { JournalIntent } from '../../client/intent-journal.js';
import type { IntentOutcome } from '../../client/intent-outcome.js';
import { KeyedCalls, type KeyedCallsOptions } from '../keyed-calls.js';
import { argsWithoutKey, takesKey, withoutKey, type InputSchema } from '../key-schema.js';
import { modelResult } from '../model-result.js';

/**
 * The part of an MCP SDK 1.x `Client` the adapter uses: what `MultiServerMCPClient.getClient(name)`
 * returns, or a client you connected yourself (the client LangChain.js's MCP adapters load tools from).
 */
export interface LangChainMcpClient {
  listTools(params?: { cursor?: string }): Promise<{
    tools: Array<{ name: string; description?: string; inputSchema: Record<string, unknown> }>;
    nextCursor?: string;
  }>;
  callTool(
    params: { name: string; arguments?: Record<string, unknown> },
    resultSchema?: undefined,
    options?: { signal?: AbortSignal; timeout?: number },
  ): Promise<unknown>;
}

/** How `idemLangChainTools` keys the tool calls (see KeyedCallsOptions), and the server's name. */
export interface IdemLangChainToolsOptions extends KeyedCallsOptions {
  /** The server's name (as in `MultiServerMCPClient`'s `mcpServers`), for the unkeyed tools. Default `idem`. */
  serverName?: string;
}

/** The LangChain tools of one MCP server, keyed in code, and what a restarted agent resumes. */
export interface IdemLangChainTools {
  /** For `createReactAgent({ tools })`, a `ToolNode` or `model.bindTools`: Idem's tools without the key argument. */
  readonly tools: StructuredToolInterface[];
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
 * A keyed tool: a key argument the model sends anyway (it never sees one) is dropped before LangChain
 * checks the input, which a schema with `additionalProperties: false` would otherwise refuse.
 */
class KeyedTool extends DynamicStructuredTool {
  readonly #keyField: string;

  constructor(
    keyField: string,
    fields: ConstructorParameters<typeof DynamicStructuredTool<Record<string, unknown>>>[0],
  ) {
    super(fields);
    this.#keyField = keyField;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the SDK's own generic signature
  override async invoke(input: any, config?: any): Promise<any> {
    const isToolCall = typeof input === 'object' && input !== null && input.type === 'tool_call';
    const stripped = isToolCall
      ? { ...input, args: argsWithoutKey(input.args, this.#keyField) }
      : argsWithoutKey(input, this.#keyField);
    return super.invoke(stripped, config);
  }
}

/**
 * The tools of an MCP server for LangChain.js (`@langchain/mcp-adapters` 1.1), with keys made in
 * code. A tool whose input schema has `idempotency_key` is shown to the model without it; its call's
 * key is made from `runId` and the id of the tool call LangChain invokes it with (`config.toolCall.id`,
 * as `ToolNode` and `createReactAgent` do), recorded in the journal before the first send and sent on
 * every send of that call, through the given MCP client (its transport and auth). The model gets the
 * result as JSON: the tool's structured result, or `{ status: 'failed' | 'in_progress' |
 * 'outcome_unknown', next_action, … }`. Tools without the key argument (the status tool among them)
 * are the adapters' own `loadMcpTools` tools, unchanged, and said once in an
 * `idem.agent.unkeyed_tools` log line.
 */
export async function idemLangChainTools(
  client: LangChainMcpClient,
  options: IdemLangChainToolsOptions,
): Promise<IdemLangChainTools> {
  const calls = new KeyedCalls(async (name, args, request) => {
    const callOptions = {
      ...(request.signal === undefined ? {} : { signal: request.signal }),
      ...(request.timeout === undefined ? {} : { timeout: request.timeout }),
    };
    return client.callTool({ name, arguments: args }, undefined, callOptions);
  }, options);
  const listed: Array<{ name: string; description?: string; inputSchema: Record<string, unknown> }> = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    listed.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);

  const keyed: string[] = [];
  const unkeyed: string[] = [];
  const own = new Map<string, StructuredToolInterface>();
  for (const mcpTool of listed) {
    if (!takesKey(mcpTool.inputSchema, calls.keyField)) {
      unkeyed.push(mcpTool.name);
      continue;
    }
    const name = mcpTool.name;
    keyed.push(name);
    own.set(
      name,
      new KeyedTool(calls.keyField, {
        name,
        description: mcpTool.description ?? '',
        schema: withoutKey(mcpTool.inputSchema as InputSchema, calls.keyField) as Record<string, unknown>,
        func: async (input: unknown, _runManager, config) => {
          // ToolNode and createReactAgent invoke a tool with its ToolCall: LangChain puts it in the config.
          const callId = (config as { toolCall?: { id?: string } } | undefined)?.toolCall?.id ?? '';
          const signal = config?.signal;
          const outcome = await calls.call(name, input, callId, signal === undefined ? {} : { signal });
          return JSON.stringify(modelResult(outcome, calls.operationTool));
        },
      }),
    );
  }
  const plain =
    unkeyed.length === 0
      ? []
      : await loadMcpTools(
          options.serverName ?? 'idem',
          client as unknown as Parameters<typeof loadMcpTools>[1],
        );
  const tools = listed.flatMap((mcpTool) => {
    const found = own.get(mcpTool.name) ?? plain.find((tool) => tool.name === mcpTool.name);
    return found === undefined ? [] : [found];
  });
  if (unkeyed.length > 0) {
    clientLogger(options.logger).warn('idem.agent.unkeyed_tools', {
      framework: 'langchain',
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
