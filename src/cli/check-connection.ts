import { callWithTimeout, type AttemptResult } from '../client/call-with-timeout.js';
import { connectTarget, type McpClient, type McpTarget } from '../client/connect-target.js';
import { systemClock } from '../core/clock.js';
import { TransportFaults, type FaultEvent } from '../testing/transport-faults.js';

/** Where `idem check` finds the server: a URL, or a command to spawn (stdio). */
export type CheckTargetSpec =
  | { readonly url: string }
  | { readonly command: string; readonly args: readonly string[]; readonly tokenEnv: string };

const STDERR_TAIL = 4000;

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
      connection = new CheckConnection({ command: spec.command, args: spec.args, env, onStderr }, label);
    }
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
    });
    return this.#client;
  }
}
