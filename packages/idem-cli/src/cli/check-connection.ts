import { systemClock } from 'idem';
import {
  callWithTimeout,
  type AttemptResult,
  connectTarget,
  type McpClient,
  type McpTarget,
  type ProtocolChoice,
} from 'idem/client';
import { TransportFaults, type FaultEvent } from 'idem/testing';
import { inProcessGroup } from './check/process-group.js';

/**
 * Where `idem check` finds the server: a URL, or a command to spawn (stdio); and which revision
 * to speak (`auto` by default: 2026-07-28 when the server offers it, else the 2025 handshake).
 */
export type CheckTargetSpec = (
  | { readonly url: string }
  | { readonly command: string; readonly args: readonly string[]; readonly tokenEnv: string }
) & { readonly protocol?: ProtocolChoice };

const STDERR_TAIL = 4000;

/** A tool as the server lists it, in plain terms (no SDK types leave this module). */
export interface ListedTool {
  readonly name: string;
  readonly description?: string;
  readonly inputSchema: Record<string, unknown>;
  readonly annotations?: {
    readonly readOnlyHint?: boolean;
    readonly idempotentHint?: boolean;
    readonly destructiveHint?: boolean;
  };
}

/**
 * One principal's connection to the server under check, with a fault injector on its transport so
 * that a row can swallow a response it provoked. Over stdio each connection is its own server
 * process (the token goes in the environment variable `tokenEnv`). A connection that closes is
 * reopened for the next call.
 */
export class CheckConnection {
  readonly faults: TransportFaults;
  #client: McpClient | undefined;
  #onFault: ((event: FaultEvent) => void) | undefined;
  #stderr = '';
  #protocol: ProtocolChoice = 'auto';

  private constructor(
    private readonly target: McpTarget,
    readonly label: string,
  ) {
    this.faults = new TransportFaults({ onFault: (event) => this.#onFault?.(event) });
  }

  static async open(
    spec: CheckTargetSpec,
    token: string | undefined,
    signal?: AbortSignal,
  ): Promise<CheckConnection> {
    let connection: CheckConnection;
    if ('url' in spec) {
      connection = new CheckConnection(
        { url: spec.url, ...(token === undefined ? {} : { token }) },
        spec.url,
      );
    } else {
      const env: Record<string, string> = {};
      for (const [name, value] of Object.entries(process.env)) if (value !== undefined) env[name] = value;
      if (token !== undefined) env[spec.tokenEnv] = token;
      const label = [spec.command, ...spec.args].join(' ');
      const onStderr = (chunk: string) => {
        connection.#stderr = (connection.#stderr + chunk).slice(-STDERR_TAIL);
      };
      // In a process group of its own: closing the connection stops everything the command started.
      const started = inProcessGroup(spec.command, spec.args);
      connection = new CheckConnection({ ...started, env, onStderr }, label);
    }
    connection.#protocol = spec.protocol ?? 'auto';
    await connection.#connect(signal);
    return connection;
  }

  /** Runs `handler` for each fault applied until the returned function is called. */
  watchFaults(handler: (event: FaultEvent) => void): () => void {
    this.#onFault = handler;
    return () => {
      if (this.#onFault === handler) this.#onFault = undefined;
    };
  }

  /** One call, no retry. Throws only when `signal` aborts. */
  call(
    tool: string,
    args: Record<string, unknown>,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<AttemptResult> {
    return callWithTimeout({
      connection: (s) => this.#connect(s),
      onClosed: () => {
        this.#client = undefined;
      },
      tool,
      args,
      timeoutMs,
      clock: systemClock,
      ...(signal === undefined ? {} : { signal }),
    });
  }

  /**
   * Every tool the server lists, following `nextCursor` (at most 100 pages). The one place where
   * `idem check` calls the SDK's `listTools`.
   */
  async listTools(timeoutMs: number, signal?: AbortSignal): Promise<ListedTool[]> {
    const client = await this.#connect(signal);
    const tools: ListedTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 100; page += 1) {
      const listed = await client.listTools(cursor === undefined ? {} : { cursor }, {
        timeout: Math.max(1, Math.ceil(timeoutMs)),
        ...(signal === undefined ? {} : { signal }),
      });
      for (const tool of listed.tools) {
        const annotations = tool.annotations ?? {};
        tools.push({
          name: tool.name,
          ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
          inputSchema: { ...tool.inputSchema },
          annotations: {
            ...(typeof annotations.readOnlyHint === 'boolean'
              ? { readOnlyHint: annotations.readOnlyHint }
              : {}),
            ...(typeof annotations.idempotentHint === 'boolean'
              ? { idempotentHint: annotations.idempotentHint }
              : {}),
            ...(typeof annotations.destructiveHint === 'boolean'
              ? { destructiveHint: annotations.destructiveHint }
              : {}),
          },
        });
      }
      cursor = listed.nextCursor;
      if (cursor === undefined) break;
    }
    return tools;
  }

  /** The last lines the server process wrote to stderr (stdio only), for error messages. */
  stderrTail(): string {
    return this.#stderr;
  }

  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    await client?.close().catch(() => undefined);
  }

  async #connect(signal?: AbortSignal): Promise<McpClient> {
    if (this.#client?.transport !== undefined) return this.#client;
    this.#client = await connectTarget(this.target, {
      ...(signal === undefined ? {} : { signal }),
      wrap: (transport) => this.faults.wrap(transport),
      clientName: 'idem-check',
      protocol: this.#protocol,
    });
    await listForHeaders(this.#client, signal);
    return this.#client;
  }
}

/**
 * At MCP 2026-07-28 the SDK client mirrors arguments marked `x-mcp-header` (an Idem tool's
 * `idempotency_key`) into `Mcp-Param-*` headers from its cached `tools/list`. Every new connection
 * lists once, so that a row's first call carries them: otherwise the call would be refused -32020
 * and sent again by the SDK, two `tools/call` on the wire where a row's transport fault counts one.
 * A listing that fails is left to that path. The 2025 revisions mirror nothing: no listing there.
 */
async function listForHeaders(client: McpClient, signal: AbortSignal | undefined): Promise<void> {
  const version = client.getNegotiatedProtocolVersion();
  if (version === undefined || version < '2026-') return;
  try {
    await client.listTools({}, signal === undefined ? {} : { signal });
  } catch {
    signal?.throwIfAborted();
  }
}
