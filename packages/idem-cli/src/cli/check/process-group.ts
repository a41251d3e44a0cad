import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** How long the launcher waits for the group to end after SIGTERM before it sends SIGKILL, ms. */
export const GROUP_GRACE_MS = 1000;

/**
 * A small Node program (run with `node -e`) that starts COMMAND in a process group of its own, with
 * this process's stdin, stdout and stderr, and ends that whole group (SIGTERM, then SIGKILL after
 * GROUP_GRACE_MS) when COMMAND exits, when it is sent SIGTERM, SIGINT or SIGHUP (the MCP client's
 * close sends SIGTERM), or when its parent is gone (`idem check` killed with SIGKILL: the parent
 * process id changes). Then it exits with COMMAND's status. The grace stays under the 2 s the SDK's
 * stdio transport waits before it sends SIGKILL to the launcher itself.
 */
const LAUNCHER = `
const { spawn } = require('node:child_process');
const { constants } = require('node:os');
const [command, ...args] = process.argv.slice(1);
const parent = process.ppid;
const child = spawn(command, args, { stdio: 'inherit', detached: true });
let stopping = false;
const group = (signal) => {
  try { process.kill(-child.pid, signal); return true; } catch { return false; }
};
function stop(code) {
  if (stopping) return;
  stopping = true;
  group('SIGTERM');
  const started = Date.now();
  const poll = setInterval(() => {
    if (group(0) && Date.now() - started < ${GROUP_GRACE_MS}) return;
    clearInterval(poll);
    group('SIGKILL');
    process.exit(code);
  }, 20);
}
child.on('error', (error) => {
  process.stderr.write(String(error && error.message) + '\\n');
  process.exit(127);
});
child.on('exit', (code, signal) => stop(code ?? 128 + (constants.signals[signal] ?? 0)));
for (const name of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(name, () => stop(128 + constants.signals[name]));
setInterval(() => { if (process.ppid !== parent) stop(1); }, 250);
`;

/**
 * The command line that runs `command` in a process group of its own, so that stopping it stops
 * every process it started (an `npx` wrapper's server, a proxy's upstream). On Windows, which has
 * no process groups, the command itself.
 */
export function inProcessGroup(
  command: string,
  args: readonly string[],
): { readonly command: string; readonly args: readonly string[] } {
  if (process.platform === 'win32') return { command, args };
  return { command: process.execPath, args: ['-e', LAUNCHER, '--', command, ...args] };
}

/**
 * True when `command` names no executable file (a path, or a name looked up on PATH): the launcher
 * would start and fail, so `idem check` says "command not found" before starting anything.
 * Always false on Windows, where the command is started directly and its own error tells.
 */
export function commandMissing(command: string): boolean {
  if (process.platform === 'win32') return false;
  const candidates = command.includes('/')
    ? [command]
    : (process.env.PATH ?? '')
        .split(delimiter)
        .filter((dir) => dir !== '')
        .map((dir) => join(dir, command));
  return !candidates.some((path) => {
    try {
      accessSync(path, constants.X_OK);
      return statSync(path).isFile();
    } catch {
      return false;
    }
  });
}
