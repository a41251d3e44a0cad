import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHILDREN, freePort, type Child, type ProcessGroup } from './process-group.js';

/** One call the upstream received, from its own record (ground truth). */
export interface UpstreamCall {
  tool: string;
  label: string;
}

/**
 * `idem proxy` on loopback in front of the suite's upstream (faults/children/upstream.mjs on stdio),
 * on a fixed port with a SQLite file, so that it can be killed and started again on both.
 */
export class ProxyRig {
  proxy: Child | undefined;
  #port = 0;
  readonly log: string;

  constructor(
    readonly group: ProcessGroup,
    readonly dir: string,
    /** Extra `idem proxy` options (--tokens, --workspace, …); --exclude excluded_write is always given. */
    readonly extraArgs: string[] = [],
  ) {
    this.log = join(dir, 'upstream-calls.jsonl');
    group.watchPidFile(`${this.log}.pids`);
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}/mcp`;
  }

  async start(): Promise<void> {
    if (this.#port === 0) this.#port = await freePort();
    this.proxy = await this.group.start({
      name: 'proxy',
      args: [
        'proxy',
        '--port',
        String(this.#port),
        '--db',
        join(this.dir, 'proxy.sqlite'),
        '--lease',
        '1s',
        '--call-timeout',
        '5s',
        '--in-flight-wait',
        '500ms',
        '--exclude',
        'excluded_write',
        ...this.extraArgs,
        '--',
        process.execPath,
        join(CHILDREN, 'upstream.mjs'),
      ],
      env: { FAULTS_UPSTREAM_LOG: this.log },
      ready: (line) => line.event === 'idem.serving',
      readyTimeoutMs: 30_000,
    });
  }

  /** Every call the upstream received, from its own file. */
  calls(): UpstreamCall[] {
    if (!existsSync(this.log)) return [];
    return readFileSync(this.log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as UpstreamCall);
  }
}
