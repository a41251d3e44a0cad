import { join } from 'node:path';
import { FaultProxy, type FaultAction, type FaultedRequest } from './fault-proxy.js';
import { freePort, type Child, type ProcessGroup } from './process-group.js';
import type { DeploymentTruth } from './checker.js';

export type ProviderMode = 'key' | 'reference' | 'none';

export interface DeploymentRigOptions {
  group: ProcessGroup;
  dir: string;
  mode: ProviderMode;
  deadlineMs: number;
  attemptTimeoutMs?: number;
  leaseMs?: number;
  /** `idem serve --no-worker` and a separate `idem worker` (else the server runs its worker). */
  separateWorker?: boolean;
  /** A PostgreSQL URL (and schema) instead of a SQLite file in `dir`. */
  postgres?: { url: string; schema: string };
  /** The SQLite file (default `dir/idem.sqlite`). */
  sqlitePath?: string;
  /** A fault proxy between the worker and the provider, deciding each request's fault. */
  providerFaults?: (request: FaultedRequest) => FaultAction;
  /**
   * The worker reaches the provider through a gate: a port on which nothing listens (connections
   * refused at once) until `openProviderGate()` listens there, in an instant (a restarted provider
   * takes seconds to start on a loaded machine).
   */
  providerGate?: boolean;
  /** A fault proxy between the MCP client and the server. */
  clientFaults?: (request: FaultedRequest) => FaultAction;
  /** Extra environment and node options for server and worker (the clock-step preload). */
  serverEnv?: Record<string, string>;
  serverNodeArgs?: string[];
}

/**
 * The durable-deployment deployment on loopback: `idem provider` (with a SQLite file, on a fixed
 * port, so that it can be killed and started again with its records), `idem serve` (on a fixed
 * port), optionally `idem worker`, and the suite's fault proxies between them.
 */
export class DeploymentRig {
  provider: Child | undefined;
  server: Child | undefined;
  worker: Child | undefined;
  providerProxy: FaultProxy | undefined;
  clientProxy: FaultProxy | undefined;
  #providerPort = 0;
  #serverPort = 0;
  #gatePort = 0;

  constructor(readonly options: DeploymentRigOptions) {}

  get providerUrl(): string {
    return `http://127.0.0.1:${this.#providerPort}`;
  }

  /** The MCP endpoint a caller uses (through the client fault proxy when there is one). */
  get mcpUrl(): string {
    return `${this.clientProxy?.url ?? `http://127.0.0.1:${this.#serverPort}`}/mcp`;
  }

  async start(): Promise<void> {
    this.#providerPort = await freePort();
    this.#serverPort = await freePort();
    await this.startProvider();
    if (this.options.providerGate) this.#gatePort = await freePort();
    if (this.options.providerFaults)
      this.providerProxy = await FaultProxy.start(this.providerUrl, this.options.providerFaults);
    await this.startServer();
    if (this.options.separateWorker) await this.startWorker();
    if (this.options.clientFaults)
      this.clientProxy = await FaultProxy.start(
        `http://127.0.0.1:${this.#serverPort}`,
        this.options.clientFaults,
      );
  }

  async startProvider(): Promise<void> {
    const args = ['provider', '--mode', this.options.mode, '--port', String(this.#providerPort)];
    this.provider = await this.options.group.start({
      name: 'provider',
      args: [...args, '--db', join(this.options.dir, 'provider.sqlite')],
      ready: (line) => line.event === 'provider.listening',
    });
  }

  #databaseArgs(): string[] {
    const pg = this.options.postgres;
    if (pg) return ['--db', pg.url, '--db-schema', pg.schema];
    return ['--db', this.options.sqlitePath ?? join(this.options.dir, 'idem.sqlite')];
  }

  #workArgs(): string[] {
    const o = this.options;
    return [
      '--provider-url',
      this.#gatePort !== 0
        ? `http://127.0.0.1:${this.#gatePort}`
        : (this.providerProxy?.url ?? this.providerUrl),
      '--provider-mode',
      o.mode,
      '--deadline',
      `${o.deadlineMs}ms`,
      '--attempt-timeout',
      `${o.attemptTimeoutMs ?? 2000}ms`,
      '--worker-lease',
      `${o.leaseMs ?? 1000}ms`,
      '--worker-poll',
      '50ms',
    ];
  }

  /** Starts (or starts again) `idem serve` on its port; `env` adds to the rig's (e.g. IDEM_TEST_FAULTS). */
  async startServer(env: Record<string, string> = {}): Promise<void> {
    this.server = await this.options.group.start({
      name: 'server',
      args: [
        'serve',
        '--port',
        String(this.#serverPort),
        ...this.#databaseArgs(),
        ...this.#workArgs(),
        '--in-flight-wait',
        '200ms',
        ...(this.options.separateWorker ? ['--no-worker'] : []),
      ],
      env: { ...this.options.serverEnv, ...env },
      nodeArgs: this.options.serverNodeArgs,
      ready: (line) => line.event === 'idem.serving',
    });
  }

  async startWorker(env: Record<string, string> = {}): Promise<void> {
    this.worker = await this.options.group.start({
      name: 'worker',
      args: ['worker', ...this.#databaseArgs(), ...this.#workArgs()],
      env: { ...this.options.serverEnv, ...env },
      nodeArgs: this.options.serverNodeArgs,
      ready: (line) => line.event === 'idem.worker_started',
    });
  }

  /** Opens the gate: from now on connections to the provider's address reach it. */
  async openProviderGate(): Promise<void> {
    this.providerProxy = await FaultProxy.start(this.providerUrl, () => ({ kind: 'pass' }), this.#gatePort);
  }

  /** The provider's own record of deployments (ground truth), read directly, retried while it restarts. */
  async deployments(): Promise<DeploymentTruth[]> {
    let last: unknown;
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        const response = await fetch(`${this.providerUrl}/deployments`);
        if (response.ok) return ((await response.json()) as { deployments: DeploymentTruth[] }).deployments;
        last = new Error(`GET /deployments: HTTP ${response.status}`);
      } catch (error) {
        last = error;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`the provider's records could not be read: ${String(last)}`);
  }

  async close(): Promise<void> {
    await this.clientProxy?.close();
    await this.providerProxy?.close();
  }
}
