import { randomUUID } from 'node:crypto';
import type { Tool } from '@modelcontextprotocol/client';
import { McpServer } from '@modelcontextprotocol/server';
import { Executor, IdemError, systemClock, type Clock, type IdemStore, type Logger } from 'idem';
import {
  authorizeByGrant,
  errorContent,
  operationTools,
  registerIdemTool,
  toolCallContext,
  toolResult,
  type IdemTool,
  type JsonStandardSchema,
  type ToolCallContext,
} from 'idem/mcp';
import { startWorker, type DurableHandler, type RunningLoops } from 'idem/operations';
import type { TokenRegistry } from '../server/token-registry.js';
import { Forwarder, type CallRelay, type ProxyResult } from './forwarded-call.js';
import { answerFor, outputProblem } from './kept-answer.js';
import { proxiedTools, type ProxiedTool, type ProxyToolSettings } from './proxy-tools.js';
import { UpstreamConnection, type UpstreamSpec, type UpstreamTool } from './upstream-connection.js';

type KeyedTool = Extract<ProxiedTool, { kind: 'keyed' }>;

/** How a `ProxyApp` is made: its store, upstream, identity, timing and tool settings. */
export interface ProxyAppOptions<App> {
  readonly store: IdemStore<App>;
  readonly upstream: UpstreamSpec;
  readonly registry: TokenRegistry;
  readonly logger: Logger;
  readonly clock?: Clock;
  readonly workspace: string;
  readonly tools: Omit<ProxyToolSettings, 'statusTool'>;
  readonly statusTool: string;
  readonly callTimeoutMs: number;
  /** The largest upstream answer kept for replay (bytes of its JSON); see `keptAnswer`. */
  readonly maxAnswerBytes: number;
  readonly inFlightWaitMs: number;
  readonly leaseMs: number;
  readonly pollIntervalMs: number;
  /**
   * The proxy serves one caller (stdio): the upstream's log messages (`notifications/message`) are
   * passed on to it. Over HTTP they are not (nothing ties one to a caller). Default false.
   */
  readonly relayLogs?: boolean;
  /** Called after the store and the connection are closed. */
  readonly onClose?: () => Promise<void>;
}

/**
 * `idem proxy`'s application: the upstream's tools re-listed (read-only and excluded ones as they
 * are, every other one keyed, see `proxiedTools`), the status tool, the forwarder and a worker
 * that settles what a dead proxy left (see `Forwarder`). Served by the same HTTP and stdio
 * transports as `idem serve` (`McpApp`).
 */
export class ProxyApp<App> {
  readonly registry: TokenRegistry;
  readonly logger: Logger;
  readonly store: IdemStore<App>;
  readonly clock: Clock;
  readonly connection: UpstreamConnection;
  readonly #options: ProxyAppOptions<App>;
  readonly #forwarder: Forwarder<App>;
  readonly #statusTool: IdemTool;
  readonly #handlers: Record<string, DurableHandler> = {};
  #tools: ProxiedTool[] = [];
  #byOperation = new Map<string, KeyedTool>();
  #worker: RunningLoops | undefined;
  /** The McpServers open now, with the tools registered on each (re-registered when the list changes). */
  readonly #live = new Set<{ server: McpServer; tools: { remove(): void }[] }>();

  private constructor(options: ProxyAppOptions<App>) {
    this.#options = options;
    this.registry = options.registry;
    this.logger = options.logger;
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    const executor = new Executor({
      store: options.store,
      clock: this.clock,
      logger: options.logger,
      authorize: authorizeByGrant,
      inFlightWaitMs: options.inFlightWaitMs,
    });
    this.connection = new UpstreamConnection(
      options.upstream,
      options.logger,
      (tools) => this.#list(tools),
      options.relayLogs === true ? (params) => this.#relayLog(params) : undefined,
    );
    const workerId = `proxy-${randomUUID()}`;
    this.#forwarder = new Forwarder({
      executor,
      ledger: options.store.ledger,
      connection: this.connection,
      toolOf: (operation) => this.#byOperation.get(operation),
      clock: this.clock,
      logger: options.logger,
      workerId,
      leaseMs: options.leaseMs,
      callTimeoutMs: options.callTimeoutMs,
      maxAnswerBytes: options.maxAnswerBytes,
      retentionMs: options.tools.retentionMs,
      inFlightWaitMs: options.inFlightWaitMs,
      workspace: options.workspace,
      names: { statusTool: options.statusTool, operatorHint: 'idem ops resolve' },
    });
    this.#statusTool = operationTools(executor, {
      statusTool: options.statusTool,
      authorize: authorizeByGrant,
      clock: this.clock,
    }).statusTool;
  }

  /** Connects to the upstream (listing its tools) and starts the worker. */
  static async start<App>(options: ProxyAppOptions<App>): Promise<ProxyApp<App>> {
    const app = new ProxyApp(options);
    await app.connection.client();
    app.#worker = startWorker({
      store: options.store,
      handlers: app.#handlers,
      clock: app.clock,
      logger: options.logger,
      leaseMs: options.leaseMs,
      pollIntervalMs: options.pollIntervalMs,
      retentionMs: options.tools.retentionMs,
      policy: app.#forwarder.policy(),
    });
    return app;
  }

  /** The tools as listed now, by kind (for the start-up log line). */
  get tools(): readonly ProxiedTool[] {
    return this.#tools;
  }

  #list(upstream: UpstreamTool[]): void {
    const tools = proxiedTools(upstream, { ...this.#options.tools, statusTool: this.#options.statusTool });
    const clash = tools.find((tool) => tool.upstream.name === this.#options.statusTool);
    if (clash !== undefined)
      this.logger.error('proxy.status_tool_clash', {
        tool: clash.upstream.name,
        message: 'the upstream has a tool named like the status tool; pass --status-tool NAME',
      });
    this.#tools = tools.filter((tool) => tool !== clash);
    this.#byOperation = new Map();
    for (const tool of this.#tools) {
      if (tool.kind !== 'keyed') continue;
      this.#byOperation.set(tool.operation, tool);
      this.#handlers[tool.operation] ??= this.#forwarder.handler(tool.operation);
    }
    // Open servers (a stdio caller's) list the new tools and tell their client (`tools/list_changed`).
    for (const live of this.#live) {
      for (const registered of live.tools) registered.remove();
      live.tools = this.#register(live.server);
    }
    this.logger.info('proxy.tools', {
      keyed: this.#tools
        .filter((tool) => tool.kind === 'keyed')
        .map((tool) => tool.upstream.name)
        .join(','),
      passed: this.#tools
        .filter((tool) => tool.kind === 'pass')
        .map((tool) => tool.upstream.name)
        .join(','),
    });
  }

  /** Passes an upstream log message on to the open servers' clients (stdio: the one caller). */
  #relayLog(params: Record<string, unknown>): void {
    for (const live of this.#live) live.server.sendLoggingMessage(params as never).catch(() => undefined);
  }

  /** A new McpServer with the proxied tools and the status tool (one per HTTP request, or one for stdio). */
  createMcpServer(): McpServer {
    const capabilities = { tools: {}, ...(this.#options.relayLogs === true ? { logging: {} } : {}) };
    const server = new McpServer({ name: 'idem-proxy', version: '1.0.0' }, { capabilities });
    const live = { server, tools: this.#register(server) };
    this.#live.add(live);
    // Out of the set when its transport closes, or when it is closed (even before it connected).
    const onclose = server.server.onclose;
    server.server.onclose = () => {
      this.#live.delete(live);
      onclose?.();
    };
    const close = server.close.bind(server);
    server.close = () => {
      this.#live.delete(live);
      return close();
    };
    registerIdemTool(server, this.#statusTool);
    return server;
  }

  /** Registers the tools as listed now on a server; every call is authorized before anything else. */
  #register(server: McpServer): { remove(): void }[] {
    return this.#tools.map((tool) => {
      const upstream = tool.upstream;
      return server.registerTool(
        upstream.name,
        {
          ...(upstream.title === undefined ? {} : { title: upstream.title }),
          description: tool.kind === 'keyed' ? tool.description : (upstream.description ?? ''),
          inputSchema: rawSchema(tool.kind === 'keyed' ? tool.inputSchema : upstream.inputSchema),
          ...(upstream.outputSchema === undefined ? {} : { outputSchema: rawSchema(upstream.outputSchema) }),
          ...(upstream.annotations === undefined ? {} : { annotations: { ...upstream.annotations } }),
        },
        // The SDK's types for a raw JSON Schema handler are narrower than what a proxy passes on.
        (async (
          args: unknown,
          ctx: {
            http?: { authInfo?: unknown };
            mcpReq: {
              signal: AbortSignal;
              _meta?: Record<string, unknown>;
              notify: (notification: { method: string; params?: Record<string, unknown> }) => Promise<void>;
            };
          },
        ) => {
          const context = toolCallContext(
            ctx.http?.authInfo as Parameters<typeof toolCallContext>[0],
            ctx.mcpReq.signal,
            ctx.mcpReq._meta,
          );
          const relay = progressRelay(ctx.mcpReq);
          if (tool.kind === 'keyed') return this.#forwarder.call(tool, args, context, relay);
          // Keyed or not, a call is authorized first, as the forwarder's executor does for keyed ones.
          const refusal = await this.#refusal(context, upstream.name);
          if (refusal !== undefined) return refusal;
          return this.#pass(upstream, args, ctx.mcpReq.signal, relay);
        }) as never,
      );
    });
  }

  /** Idem's `forbidden` answer when the call's credential does not hold the proxy's workspace. */
  async #refusal(context: ToolCallContext, tool: string): Promise<ProxyResult | undefined> {
    const workspace = this.#options.workspace;
    const allowed =
      context.principal !== undefined &&
      (await authorizeByGrant(context.principal, workspace, {
        operation: tool,
        ...(context.credentials === undefined ? {} : { credentials: context.credentials }),
      }));
    if (allowed) return undefined;
    const message =
      context.principal === undefined
        ? 'no authenticated principal'
        : `principal may not act in workspace ${JSON.stringify(workspace)}`;
    return toolResult(errorContent(new IdemError('forbidden', message)), true) as ProxyResult;
  }

  /** A read-only or excluded tool: the upstream's answer as it is. */
  async #pass(
    upstream: UpstreamTool,
    args: unknown,
    signal: AbortSignal,
    relay: CallRelay,
  ): Promise<ProxyResult> {
    const client = await this.connection.client();
    // As for keyed tools: the answer as it came, marked when it does not fit the output schema.
    const { outputSchema, ...definition } = upstream;
    const result = (await client.callTool(
      { name: upstream.name, arguments: (args ?? {}) as Record<string, unknown> },
      {
        timeout: this.#options.callTimeoutMs,
        signal,
        toolDefinition: definition as Tool,
        ...(relay.onprogress === undefined ? {} : { onprogress: relay.onprogress }),
      },
    )) as ProxyResult;
    return answerFor(result, outputProblem(outputSchema, result));
  }

  /** Stops the worker, closes the upstream connection and the store. */
  async close(): Promise<void> {
    await this.#worker?.stop();
    await this.connection.close();
    await this.store.close();
    await this.#options.onClose?.();
  }
}

/**
 * Passes the upstream's progress on a call to the caller, when the caller asked for progress (a
 * `progressToken` in its request's `_meta`), as `notifications/progress` with the caller's token.
 */
function progressRelay(request: {
  _meta?: Record<string, unknown>;
  notify: (notification: { method: string; params?: Record<string, unknown> }) => Promise<void>;
}): CallRelay {
  const token = request._meta?.progressToken;
  if (typeof token !== 'string' && typeof token !== 'number') return {};
  return {
    onprogress: ({ progress, total, message }) => {
      const params = {
        progressToken: token,
        progress,
        ...(total === undefined ? {} : { total }),
        ...(message === undefined ? {} : { message }),
      };
      request.notify({ method: 'notifications/progress', params }).catch(() => undefined);
    },
  };
}

/**
 * A JSON Schema as the SDK's McpServer takes a schema: listed exactly as given, and letting every
 * value through (the upstream validates its own arguments; the proxy checks the key itself).
 */
function rawSchema(json: Record<string, unknown>): JsonStandardSchema {
  return {
    '~standard': {
      version: 1,
      vendor: 'idem-proxy',
      validate: (value) => ({ value }),
      jsonSchema: { input: () => json, output: () => json },
    },
  };
}
