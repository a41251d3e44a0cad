import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { MockLanguageModelV4 } from 'ai/test';
import { examplePath } from '../helpers/example-fixtures.js';
import { REPO_ROOT, cleanEnv, ensureBuilt, track } from '../helpers/mcp-fixtures.js';

type Part =
  { type: 'tool-call'; toolCallId: string; toolName: string; input: string } | { type: 'text'; text: string };

const none = { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined };

/** The AI SDK's own test model, answering each step with the next of `steps`. */
export function scriptedModel(steps: Part[][]): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    doGenerate: steps.map((content) => ({
      content,
      finishReason: {
        unified: content.some((part) => part.type === 'tool-call') ? 'tool-calls' : 'stop',
        raw: undefined,
      },
      usage: { inputTokens: none, outputTokens: { total: undefined, text: undefined, reasoning: undefined } },
      warnings: [],
    })),
  });
}

export function toolCall(toolCallId: string, toolName: string, input: Record<string, unknown>): Part {
  return { type: 'tool-call', toolCallId, toolName, input: JSON.stringify(input) };
}

/** Compiles the examples when examples/NAME.ts is newer than its build (tsc takes a minute). */
export function ensureExampleBuilt(name: string): void {
  ensureBuilt();
  const source = join(REPO_ROOT, 'examples', `${name}.ts`);
  const built = examplePath(name);
  if (existsSync(built) && statSync(built).mtimeMs >= statSync(source).mtimeMs) return;
  execFileSync('npx', ['tsc', '-p', 'tsconfig.examples.json'], { cwd: REPO_ROOT, stdio: 'inherit' });
}

/** An example started as its own process, its stdout lines collected. */
export interface RunningExample {
  readonly proc: ChildProcess;
  readonly lines: string[];
  stderr(): string;
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function spawnExample(name: string, env: Record<string, string>): RunningExample {
  const proc = track(
    spawn(process.execPath, [examplePath(name)], { cwd: REPO_ROOT, env: cleanEnv(env), stdio: 'pipe' }),
  );
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    partial += chunk;
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { proc, lines, stderr: () => stderr, exited: () => exit };
}

/** The example's last stdout line, parsed; fails with its stderr when it did not exit 0. */
export async function lastJsonLine(run: RunningExample): Promise<Record<string, unknown>> {
  const { code, signal } = await run.exited();
  if (code !== 0) throw new Error(`example exited ${code ?? signal}; stderr:\n${run.stderr()}`);
  const last = run.lines.filter((line) => line.trim() !== '').at(-1);
  if (last === undefined) throw new Error(`example printed nothing; stderr:\n${run.stderr()}`);
  return JSON.parse(last) as Record<string, unknown>;
}
