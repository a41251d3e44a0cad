import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createClient } from '@redis/client';

export interface RunningRedis {
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

/** Why redis-server cannot be used here, or undefined when it can. */
export function redisMissing(): string | undefined {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined) return `redis-server is not installed (${probe.error.message})`;
  if (probe.status !== 0) return `redis-server --version failed: ${probe.stderr.trim()}`;
  return undefined;
}

export function redisVersion(): string {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  return /v=(\S+)/.exec(probe.stdout)?.[1] ?? 'unknown';
}

/** A free loopback port (not 6379: never a developer's own Redis). */
async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
      });
    });
    if (port !== 6379 && port !== 0) return port;
  }
  throw new Error('no free port');
}

/**
 * Starts a private redis-server on a loopback port: `always` = AOF with appendfsync always (every
 * write is fsynced before the reply, the durability of SQLite FULL); `none` = no persistence.
 */
export async function startRedis(dir: string, persistence: 'always' | 'none'): Promise<RunningRedis> {
  const port = await freePort();
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--daemonize',
    'no',
    '--protected-mode',
    'yes',
    ...(persistence === 'always'
      ? ['--appendonly', 'yes', '--appendfsync', 'always', '--appendfilename', 'bench.aof']
      : ['--appendonly', 'no']),
  ];
  const child: ChildProcess = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let exited = false;
  child.once('exit', () => (exited = true));
  const stop = async () => {
    if (exited) return;
    const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
    await done;
    clearTimeout(timer);
  };
  // Wait (bounded) until it answers PING.
  const deadline = performance.now() + 10_000;
  for (;;) {
    if (exited) throw new Error(`redis-server exited at start (port ${port})`);
    const client = createClient({ socket: { host: '127.0.0.1', port, reconnectStrategy: false } });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.ping();
      await client.quit();
      break;
    } catch {
      // A client that never connected throws "The client is closed" synchronously here.
      await Promise.resolve()
        .then(() => client.disconnect())
        .catch(() => undefined);
      if (performance.now() > deadline) {
        await stop();
        throw new Error(`redis-server did not answer on port ${port} within 10 s`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return { port, pid: child.pid as number, stop };
}
