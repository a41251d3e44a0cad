import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  Client,
  StreamableHTTPClientTransport,
  type CallToolResult,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type RequestOptions,
  type Transport,
  type TransportSendOptions,
} from '@modelcontextprotocol/client';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import { attachAuthInfo } from '../../packages/idem/src/mcp/attach-auth-info.js';
import { grantAuthInfo } from '../../packages/idem-cli/src/server/grant-auth-info.js';
import type { ReferenceApp } from '../../packages/idem-cli/src/server/reference-app.js';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const CLI = join(REPO_ROOT, 'packages', 'idem-cli', 'dist', 'cli', 'main.js');

/** Builds dist/ once if it is missing (child processes run the built CLI). */
export function ensureBuilt(): void {
  if (existsSync(CLI)) return;
  execFileSync('npm', ['run', 'build'], { cwd: REPO_ROOT, stdio: 'inherit' });
}

// ---------------------------------------------------------------------------------------------
// Temp dirs and process bookkeeping: every test file calls `cleanup()` in afterEach/afterAll.

const tempDirs = new Set<string>();
const processes = new Set<ChildProcess>();

export function makeTempDir(prefix = 'idem-e2e-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

/** Registers a child process so that `cleanup()` kills it. */
export function track(proc: ChildProcess): ChildProcess {
  processes.add(proc);
  proc.once('exit', () => processes.delete(proc));
  return proc;
}

function exited(proc: ChildProcess): boolean {
  return proc.exitCode !== null || proc.signalCode !== null;
}

function waitForExitOf(proc: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (exited(proc)) return Promise.resolve({ code: proc.exitCode, signal: proc.signalCode });
  return new Promise((resolveExit) => {
    proc.once('exit', (code, signal) => resolveExit({ code, signal }));
  });
}

/** Kills every tracked process (SIGKILL) and removes every temp dir. */
export async function cleanup(): Promise<void> {
  const running = [...processes].filter((proc) => !exited(proc));
  for (const proc of running) proc.kill('SIGKILL');
  await Promise.all(running.map(waitForExitOf));
  processes.clear();
  // maxRetries: a thread that is ending (a store's checkpointer) may still write its last file.
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  tempDirs.clear();
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/** The child environment without npm's per-run variables (a child npm or npx would take them as its config). */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    if (/^npm_/i.test(name) || name === 'IDEM_TEST_FAULTS' || name.startsWith('IDEM_')) continue;
    env[name] = value;
  }
  return { ...env, ...extra };
}

// ---------------------------------------------------------------------------------------------
// Spawned reference server (HTTP).

export interface LogLine {
  event?: string;
  level?: string;
  [field: string]: unknown;
}

export interface ServerProcess {
  readonly url: string;
  readonly port: number;
  readonly proc: ChildProcess;
  /** Every stderr line so far, raw. */
  stderrLines(): string[];
  /** The stderr lines that parse as JSON objects, as far as they have been read. */
  logs(): LogLine[];
  /**
   * The log lines that `match`, once there are at least `count` of them. A reply can reach the test
   * before the stderr line the server wrote for it (two pipes, one event loop): read counts with this.
   */
  waitForLogs(match: (line: LogLine) => boolean, count: number, timeoutMs?: number): Promise<LogLine[]>;
  /** Everything written to stdout so far (the HTTP server writes nothing there). */
  stdout(): string;
  kill(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  waitForExit(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface StartServerOptions {
  /** The CLI command to run (default `serve`). */
  command?: string;
  /** Arguments after the command; `--port` is added first (a free port) unless given. */
  args?: string[];
  env?: Record<string, string>;
  /** How long to wait for the `idem.serving` log line. */
  readyTimeoutMs?: number;
}

/** Spawns `node dist/cli/main.js serve ...` (or another command) and resolves once it logged `idem.serving`. */
export async function startServerProcess(options: StartServerOptions = {}): Promise<ServerProcess> {
  const args = [...(options.args ?? [])];
  let port: number;
  const portIndex = args.indexOf('--port');
  if (portIndex >= 0) port = Number(args[portIndex + 1]);
  else {
    port = await freePort();
    // First: `idem proxy` takes its upstream command after `--`.
    args.unshift('--port', String(port));
  }
  const proc = track(
    spawn(process.execPath, [CLI, options.command ?? 'serve', ...args], {
      cwd: REPO_ROOT,
      env: cleanEnv(options.env),
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  const lines: string[] = [];
  let partial = '';
  let stdout = '';
  proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  const ready = new Promise<string>((resolveReady, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`server did not log idem.serving in time; stderr:\n${lines.join('\n')}`)),
      options.readyTimeoutMs ?? 15_000,
    );
    proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      partial += chunk;
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        const parsed = parseJsonLine(line);
        if (parsed?.event === 'idem.serving' && typeof parsed.url === 'string') {
          clearTimeout(timer);
          resolveReady(parsed.url);
        }
      }
    });
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(
        new Error(`server exited (${code ?? signal}) before serving; stderr:\n${lines.join('\n')}${partial}`),
      );
    });
  });
  const url = await ready;
  const logs = (): LogLine[] =>
    (partial === '' ? lines : [...lines, partial])
      .map(parseJsonLine)
      .filter((l): l is LogLine => l !== undefined);
  return {
    url,
    port,
    proc,
    stderrLines: () => (partial === '' ? [...lines] : [...lines, partial]),
    logs,
    waitForLogs: (match, count, timeoutMs) => waitForLogLines(logs, match, count, timeoutMs),
    kill: (signal: NodeJS.Signals = 'SIGKILL') => {
      if (!exited(proc)) proc.kill(signal);
      return waitForExitOf(proc);
    },
    waitForExit: () => waitForExitOf(proc),
    stdout: () => stdout,
  };
}

/** Polls `logs` until `count` lines `match` (or fails after `timeoutMs`, naming what it saw). */
export async function waitForLogLines(
  logs: () => LogLine[],
  match: (line: LogLine) => boolean,
  count: number,
  timeoutMs = 10_000,
): Promise<LogLine[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = logs().filter(match);
    if (found.length >= count) return found;
    if (Date.now() >= deadline) {
      throw new Error(`expected ${count} matching log line(s) within ${timeoutMs} ms, found ${found.length}`);
    }
    await new Promise((resolveLater) => setTimeout(resolveLater, 20));
  }
}

export function parseJsonLine(line: string): LogLine | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as LogLine)
      : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// SDK v2 clients (`@modelcontextprotocol/client`); test/helpers/v1-fixtures.ts has the 1.x ones.

export interface ConnectOptions {
  /** Wraps the client transport (e.g. with `dropFirstResponse`). */
  wrap?: (transport: Transport) => Transport;
}

async function connectClient(transport: Transport): Promise<Client> {
  const client = new Client({ name: 'idem-e2e', version: '0.0.0' });
  await client.connect(transport);
  // listTools caches each tool's output schema, so every callTool result is validated against it.
  await client.listTools();
  return client;
}

/** A real SDK v2 client over Streamable HTTP, with `Authorization: Bearer <token>` when a token is given. */
export async function connectHttp(
  url: string,
  token?: string,
  options: ConnectOptions = {},
): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    ...(token === undefined ? {} : { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
  });
  return connectClient(options.wrap ? options.wrap(transport) : transport);
}

export interface InMemoryOptions extends ConnectOptions {
  /**
   * JSON round-trip every message in both directions, as a real wire would (default true), so that
   * values JSON cannot carry (undefined, NaN, shared references) never reach the server.
   */
  serialize?: boolean;
  /** The workspaces the connection's credential grants; default those of the app's fixed grant. */
  workspaces?: readonly string[];
}

/**
 * An SDK v2 client connected in-process to `app.createMcpServer()`, acting as `principal` with the
 * workspaces of the app's fixed grant (`options.workspaces` to choose others).
 */
export async function connectInMemory(
  app: ReferenceApp,
  principal: string,
  options: InMemoryOptions = {},
): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = app.createMcpServer();
  await server.connect(serverSide);
  const workspaces = options.workspaces ?? app.registry.fixedGrant?.workspaces ?? [];
  attachAuthInfo(serverSide, grantAuthInfo({ principal, workspaces }, 'local'));
  let transport: Transport = clientSide;
  if (options.serialize ?? true) transport = new JsonWire(transport);
  if (options.wrap) transport = options.wrap(transport);
  const client = await connectClient(transport);
  const close = client.close.bind(client);
  client.close = async () => {
    await close();
    await server.close();
  };
  return client;
}

/** Base for transport wrappers: forwards everything to `inner`. */
abstract class WrappedTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;

  constructor(protected readonly inner: Transport) {
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
    inner.onmessage = (message, extra) => this.receive(message, extra);
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version);
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    return this.inner.send(message, options);
  }

  protected receive(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    this.onmessage?.(message, extra);
  }
}

class JsonWire extends WrappedTransport {
  override send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    return this.inner.send(JSON.parse(JSON.stringify(message)) as JSONRPCMessage, options);
  }

  protected override receive(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    this.onmessage?.(JSON.parse(JSON.stringify(message)) as JSONRPCMessage, extra);
  }
}

/**
 * Swallows the first incoming response to a `tools/call` request: the server did the work and
 * answered, but the client never sees the answer and its request times out, as after a dropped
 * connection. `dropped` holds the swallowed message.
 */
export class DropFirstResponse extends WrappedTransport {
  dropped: JSONRPCMessage | undefined;
  readonly #toolCalls = new Set<string | number>();

  override send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if ('method' in message && message.method === 'tools/call' && 'id' in message) {
      this.#toolCalls.add(message.id);
    }
    return super.send(message, options);
  }

  protected override receive(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    const id = 'id' in message && !('method' in message) ? message.id : undefined;
    if (this.dropped === undefined && id !== undefined && this.#toolCalls.has(id)) {
      this.dropped = message;
      return;
    }
    super.receive(message, extra);
  }

  /** The structuredContent of the swallowed tools/call result. */
  droppedResult(): Record<string, unknown> | undefined {
    const message = this.dropped as { result?: CallToolResult } | undefined;
    return message?.result?.structuredContent as Record<string, unknown> | undefined;
  }
}

export function dropFirstResponse(transport: Transport): DropFirstResponse {
  return new DropFirstResponse(transport);
}

// ---------------------------------------------------------------------------------------------
// Tool call shorthands.

export type Structured = Record<string, unknown> & {
  status?: string;
  operation_id?: string;
  resource_id?: string;
  note_id?: string;
  replayed?: boolean;
  error?: { code: string; message: string; retryable: boolean; retry_after_ms?: number };
  next_action?: string;
};

export interface ToolResult {
  isError: boolean;
  sc: Structured;
  raw: CallToolResult;
}

export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  options?: RequestOptions,
): Promise<ToolResult> {
  const raw = await client.callTool({ name, arguments: args }, options);
  if (raw.structuredContent === undefined) {
    throw new Error(`tool ${name} returned no structuredContent: ${JSON.stringify(raw)}`);
  }
  return { isError: raw.isError === true, sc: raw.structuredContent as Structured, raw };
}

export interface NoteView {
  note_id: string;
  body: string;
  created_at: string;
}

export async function listNotes(client: Client, workspace = 'default'): Promise<NoteView[]> {
  const result = await callTool(client, 'list_notes', { workspace });
  if (result.isError) throw new Error(`list_notes failed: ${JSON.stringify(result.sc)}`);
  return result.sc.notes as NoteView[];
}

export async function closeQuietly(client: Client | undefined): Promise<void> {
  await client?.close().catch(() => undefined);
}
