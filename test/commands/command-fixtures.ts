import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { systemClock } from '../../packages/idem/src/core/clock.js';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { CommandHandler } from '../../packages/idem/src/commands/command-handler.js';
import { parseCommands } from '../../packages/idem/src/commands/command-spec.js';
import { commandTools } from '../../packages/idem/src/commands/command-tools.js';
import type { IdemTool } from '../../packages/idem/src/mcp/idem-tool.js';
import { Worker } from '../../packages/idem/src/operations/worker.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import { memoryStore } from '../../packages/idem/src/testing/memory-store.js';
import { memoryLogger, openEngineStore, tempDir, type Engine } from '../operations/operations-fixtures.js';

export const WORKSPACE = 'team-a';

/** The stores a command harness runs on: the worker tests' engines, and the memory store. */
export type CommandEngine = Engine | 'memory';

export interface CommandHarness {
  readonly dir: string;
  readonly store: IdemStore;
  readonly handler: CommandHandler;
  readonly logger: ReturnType<typeof memoryLogger>;
  /** The side file commands append to (`$SIDE`). */
  readonly side: string;
  /** Calls run_command as `principal` (default alice); returns structuredContent and isError. */
  run(
    command: string,
    key: string,
    principal?: string,
  ): Promise<{ isError: boolean; sc: Record<string, unknown> }>;
  read(
    args: Record<string, unknown>,
    principal?: string,
  ): Promise<{ isError: boolean; sc: Record<string, unknown> }>;
  /** Starts a worker (stopped when the test ends). */
  startWorker(): Worker;
  get(operationId: string): Promise<OperationRecord>;
  /** Polls until the operation is no longer active. */
  settled(operationId: string, timeoutMs?: number): Promise<OperationRecord>;
  sideLines(): string[];
}

/**
 * A store on `engine`, a CommandHandler with `commands` (each gets `SIDE` in its env: a file it
 * may append to, to prove how often it ran), the two tools on an Executor, and workers on demand.
 */
export async function commandHarness(
  engine: CommandEngine,
  commands: Record<string, Record<string, unknown>>,
  options: { killGraceMs?: number; serverEnv?: Record<string, string> } = {},
): Promise<CommandHarness> {
  const dir = tempDir();
  const side = join(dir, 'side.txt');
  const store =
    engine === 'memory'
      ? (memoryStore() as IdemStore)
      : await openEngineStore(engine, join(dir, 'idem.sqlite'), systemClock);
  const withSide: Record<string, Record<string, unknown>> = {};
  for (const [name, spec] of Object.entries(commands)) {
    withSide[name] = { ...spec, env: { ...((spec.env as Record<string, string>) ?? {}), SIDE: side } };
  }
  const handler = new CommandHandler({
    commands: parseCommands(withSide, dir),
    outputDir: join(dir, 'out'),
    killGraceMs: options.killGraceMs ?? 1000,
    ...(options.serverEnv === undefined ? {} : { serverEnv: options.serverEnv }),
  });
  const logger = memoryLogger();
  const executor = new Executor({ store, clock: systemClock, authorize: () => true, inFlightWaitMs: 0 });
  const [runTool, readTool] = commandTools({ executor, handler }) as [IdemTool, IdemTool];
  const call = async (tool: IdemTool, args: Record<string, unknown>, principal: string) => {
    const result = await tool.handle(args, { principal, credentials: { workspaces: [WORKSPACE] } });
    return { isError: result.isError === true, sc: result.structuredContent as Record<string, unknown> };
  };
  const get = async (operationId: string) => {
    const record = await store.ledger.get(operationId);
    if (record === undefined) throw new Error(`no operation ${operationId}`);
    return record;
  };
  return {
    dir,
    store,
    handler,
    logger,
    side,
    run: (command, key, principal = 'alice') =>
      call(runTool, { idempotency_key: key, workspace: WORKSPACE, command }, principal),
    read: (args, principal = 'alice') => call(readTool, args, principal),
    startWorker: () => {
      const worker = new Worker({
        store,
        handlers: { run_command: handler },
        logger,
        leaseMs: 1500,
        pollIntervalMs: 20,
      });
      worker.start();
      onTestFinished(() => worker.stop());
      return worker;
    },
    get,
    settled: async (operationId, timeoutMs = 15_000) => {
      const until = performance.now() + timeoutMs;
      for (;;) {
        const record = await get(operationId);
        if (!['accepted', 'running', 'cancel_requested'].includes(record.status)) return record;
        if (performance.now() > until) throw new Error(`operation ${operationId} still ${record.status}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    sideLines: () =>
      existsSync(side)
        ? readFileSync(side, 'utf8')
            .split('\n')
            .filter((l) => l !== '')
        : [],
  };
}

/** True while a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls (real time) until `check` holds. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > end) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
