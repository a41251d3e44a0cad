import {
  Client,
  ProtocolError,
  ProtocolErrorCode,
  StreamableHTTPClientTransport,
  type Transport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { Logger } from 'idem';

/** The upstream MCP server `idem proxy` stands in front of: a command over stdio, or a URL. */
export type UpstreamSpec =
  | { readonly kind: 'stdio'; readonly command: string; readonly args: readonly string[] }
  | {
      readonly kind: 'http';
      readonly url: string;
      /** Sent with every request (e.g. `Authorization: Bearer …`); never logged. */
      readonly headers: Readonly<Record<string, string>>;
    };

/** One tool as the upstream lists it (the fields the proxy reads and passes on). */
export interface UpstreamTool {
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  readonly inputSchema: Record<string, unknown>;
  readonly outputSchema?: Record<string, unknown>;
  readonly annotations?: Record<string, unknown>;
  /** MCP tasks: `taskSupport: 'required'` marks a tool that only runs as a task. */
  readonly execution?: { readonly taskSupport?: string };
}

/** Every page of the upstream's tool list. */
async function listAll(client: Client): Promise<UpstreamTool[]> {
  const tools: UpstreamTool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...(page.tools as unknown as UpstreamTool[]));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

/** A short, body-free label of the upstream for logs and messages (no header, no query string). */
export function upstreamLabel(spec: UpstreamSpec): string {
  if (spec.kind === 'stdio') return [spec.command, ...spec.args].join(' ');
  const url = new URL(spec.url);
  return `${url.origin}${url.pathname}`;
}

/**
 * One MCP client connection to the upstream, made again on demand after it closed (a stdio
 * upstream that died is started again by the next call). `onConnected` is given the tool list of
 * every new connection, so that a restarted upstream's changed schemas are seen.
 */
export class UpstreamConnection {
  readonly #spec: UpstreamSpec;
  readonly #logger: Logger;
  readonly #onConnected: (tools: UpstreamTool[]) => void;
  readonly #onLog: ((params: Record<string, unknown>) => void) | undefined;
  #client: Promise<Client> | undefined;
  #closing = false;

  /** `onLog`, when given, is handed every log message (`notifications/message`) the upstream sends. */
  constructor(
    spec: UpstreamSpec,
    logger: Logger,
    onConnected: (tools: UpstreamTool[]) => void,
    onLog?: (params: Record<string, unknown>) => void,
  ) {
    this.#spec = spec;
    this.#logger = logger;
    this.#onConnected = onConnected;
    this.#onLog = onLog;
  }

  /** The connected client, connecting (and listing the tools) first when there is none. */
  client(): Promise<Client> {
    if (this.#closing) return Promise.reject(new Error('the proxy is stopping'));
    this.#client ??= this.#connect().catch((error: unknown) => {
      this.#client = undefined;
      throw error;
    });
    return this.#client;
  }

  async #connect(): Promise<Client> {
    const transport = this.#transport();
    // Over HTTP the era is negotiated (`server/discover` first, `initialize` when the upstream is
    // of the 2025 era), so an upstream that serves only 2026-07-28 is reached too. A stdio upstream
    // is opened with the 2025 handshake, which every stdio server answers (auto would spawn the
    // command twice to probe it).
    const client = new Client(
      { name: 'idem-proxy', version: '1.0.0' },
      { versionNegotiation: { mode: this.#spec.kind === 'http' ? 'auto' : 'legacy' } },
    );
    client.onclose = () => {
      // A later call connects again (and starts a stdio upstream again).
      if (this.#client !== undefined) this.#logger.warn('proxy.upstream_closed', {});
      this.#client = undefined;
    };
    // The upstream's requests to its client (elicitation, sampling, roots) are not relayed: refused.
    client.fallbackRequestHandler = (request) =>
      Promise.reject(
        new ProtocolError(
          ProtocolErrorCode.MethodNotFound,
          `idem proxy does not relay ${request.method} to its callers: the call cannot ask them anything`,
        ),
      );
    // A changed tool list is picked up without a reconnect (a changed input schema is a new version).
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      listAll(client).then(
        (changed) => {
          if (this.#closing) return;
          this.#onConnected(changed);
          this.#logger.info('proxy.tools_changed', { tools: changed.length });
        },
        () => this.#logger.warn('proxy.tools_list_failed', {}),
      );
    });
    const onLog = this.#onLog;
    if (onLog !== undefined)
      client.setNotificationHandler('notifications/message', (notification) => {
        onLog(notification.params as Record<string, unknown>);
      });
    await client.connect(transport, { timeout: 30_000 });
    const tools = await listAll(client);
    this.#onConnected(tools);
    this.#logger.info('proxy.upstream_connected', {
      upstream: upstreamLabel(this.#spec),
      protocol_version: client.getNegotiatedProtocolVersion(),
      tools: tools.length,
    });
    return client;
  }

  #transport(): Transport {
    const spec = this.#spec;
    if (spec.kind === 'http') {
      return new StreamableHTTPClientTransport(new URL(spec.url), {
        requestInit: { headers: { ...spec.headers } },
      });
    }
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(process.env)) if (value !== undefined) env[name] = value;
    // The upstream's stderr is ours: its logs stay visible, and stdout stays the protocol's.
    return new StdioClientTransport({ command: spec.command, args: [...spec.args], env, stderr: 'inherit' });
  }

  /** Closes the connection (and ends a stdio upstream); no call connects again after. */
  async close(): Promise<void> {
    this.#closing = true;
    const pending = this.#client;
    this.#client = undefined;
    if (pending !== undefined) await (await pending.catch(() => undefined))?.close();
  }
}
