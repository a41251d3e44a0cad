import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, cleanEnv, ensureBuilt, track } from './mcp-fixtures.js';

/** Where tsconfig.examples.json compiles examples/*.ts; they import `idem` by its package name. */
export const EXAMPLES_OUT = join(REPO_ROOT, 'dist-examples');

/**
 * Builds the library (the examples resolve `idem`, `idem/mcp`, … through package.json "exports",
 * exactly as a user's code would after `npm install idem`) and then the examples themselves.
 */
export function buildExamples(): void {
  ensureBuilt();
  execFileSync('npx', ['tsc', '-p', 'tsconfig.examples.json'], { cwd: REPO_ROOT, stdio: 'inherit' });
  if (!existsSync(join(EXAMPLES_OUT, 'custom-tool.js'))) throw new Error('examples did not build');
}

export function examplePath(name: string): string {
  return join(EXAMPLES_OUT, `${name}.js`);
}

/** Runs an example to completion; resolves with its stdout, rejects on a non-zero exit. */
export function runExample(name: string, env: Record<string, string>, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [examplePath(name)],
      { cwd: REPO_ROOT, env: cleanEnv(env), timeout: timeoutMs },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`example ${name} failed: ${error.message}\n${stderr}`));
        else resolve(stdout);
      },
    );
    track(child);
  });
}

/** Starts a long-running example (a server) in the background; `cleanup()` kills it. */
export function startExample(
  name: string,
  env: Record<string, string>,
): { stderr: () => string; proc: ChildProcess } {
  const child = track(
    spawn(process.execPath, [examplePath(name)], {
      cwd: REPO_ROOT,
      env: cleanEnv(env),
      stdio: ['ignore', 'ignore', 'pipe'],
    }),
  );
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return { stderr: () => stderr, proc: child };
}
