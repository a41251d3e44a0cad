import { Client, StreamableHTTPClientTransport, type Transport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

export type { Client as McpClient, Transport as McpTransport } from '@modelcontextprotocol/client';

/** An MCP server reached over Streamable HTTP. */
export interface HttpTarget {
  readonly url: string;
  /** Sent as `Authorization: Bearer <token>`. */
  readonly token?: string;
}

/** An MCP server started as a child process speaking MCP on stdin/stdout. */
export interface StdioTarget {
  readonly command: string;
  readonly args?: readonly string[];
  /** The child's whole environment. Default: this process's environment. */
  readonly env?: Record<string, string>;
  readonly cwd?: string;
  /** Receives the child's stderr; without it stderr is read and discarded (a full pipe would stall it). */
  readonly onStderr?: (chunk: string) => void;
}

/** A server to connect to: over Streamable HTTP (`url`) or as a stdio child process (`command`). */
export type McpTarget = HttpTarget | StdioTarget;

/**
 * Which MCP revision a connection speaks: `auto` (the default) asks the server with
 * `server/discover` and speaks 2026-07-28 when it offers it, else opens with the 2025 `initialize`
 * handshake; `legacy` opens with `initialize` without asking; a revision (`2026-07-28`) is pinned:
 * a server that does not offer it is not connected to.
 */
export type ProtocolChoice = 'auto' | 'legacy' | (string & {});

/** How `connectTarget` connects: signal, connect timeout, a transport wrapper, the client's name, the revision. */
export interface ConnectTargetOptions {
  signal?: AbortSignal;
  /** Connect timeout, ms. Default 10 s. */
  timeoutMs?: number;
  /** Wraps the transport before connecting (fault injection, tracing). */
  wrap?: (transport: Transport) => Transport;
  /** clientInfo.name. Default `idem-client`. */
  clientName?: string;
  /** The revision to speak (see ProtocolChoice). Default `auto`. */
  protocol?: ProtocolChoice;
}

/**
 * Connects an SDK v2 `Client` (`@modelcontextprotocol/client`) to a target and settles the revision
 * (`protocol`): by default the server is asked (`server/discover`) and the 2026-07-28 revision is
 * spoken when it offers it, the 2025 `initialize` exchange otherwise (which servers on SDK v2 and
 * 1.x both answer). A stdio target is then probed by a short-lived second process of the same
 * command (the SDK's way; `legacy` avoids it). Every
 * connection is new: pass this as the `connect` factory of an IdemClient so that a dropped
 * connection (or a server process that died) is replaced before the next attempt.
 */
export async function connectTarget(target: McpTarget, options: ConnectTargetOptions = {}): Promise<Client> {
  let transport: Transport;
  if ('url' in target) {
    transport = new StreamableHTTPClientTransport(new URL(target.url), {
      ...(target.token === undefined
        ? {}
        : { requestInit: { headers: { Authorization: `Bearer ${target.token}` } } }),
    });
  } else {
    const stdio = new StdioClientTransport({
      command: target.command,
      args: [...(target.args ?? [])],
      env: target.env ?? inheritedEnv(),
      ...(target.cwd === undefined ? {} : { cwd: target.cwd }),
      stderr: 'pipe',
    });
    const onStderr = target.onStderr;
    stdio.stderr?.on('data', (chunk: Buffer | string) => onStderr?.(chunk.toString()));
    transport = stdio;
  }
  const protocol = options.protocol ?? 'auto';
  const client = new Client(
    { name: options.clientName ?? 'idem-client', version: '1.0.0' },
    {
      versionNegotiation: {
        mode: protocol === 'auto' ? 'auto' : protocol === 'legacy' ? 'legacy' : { pin: protocol },
      },
    },
  );
  try {
    await client.connect(options.wrap ? options.wrap(transport) : transport, {
      timeout: options.timeoutMs ?? 10_000,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
  } catch (error) {
    await client.close().catch(() => undefined);
    throw error;
  }
  return client;
}

function inheritedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined) env[name] = value;
  return env;
}
