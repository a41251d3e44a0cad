import { writeFileSync } from 'node:fs';
import { timeoutSignal } from 'idem';
import { credentialsRefusal } from 'idem/client';
import { CliError } from './cli-error.js';
import { CheckConnection, type CheckTargetSpec, type ListedTool } from './check-connection.js';
import { connectionFailure } from './connection-failure.js';
import { checkReport, exitStatus, formatTally } from './check/check-report.js';
import { CHECK_HELP, parseCheckOptions } from './check/check-options.js';
import { checkTool, type ToolReport } from './check/check-tool.js';
import { formatCheckReport } from './check/format-report.js';
import { junitReport } from './check/junit-report.js';
import { commandMissing } from './check/process-group.js';
import { planTools } from './check/tool-plan.js';

export { CHECK_HELP } from './check/check-options.js';

/**
 * `idem check`: lists the server's tools, checks the mutating ones and prints the report to `out`
 * (and writes --junit). Throws CliError(…, 1) when a row failed or the server cannot be reached,
 * (…, 2) on a usage error, (…, 3) when no row failed but some were inconclusive. Whatever it started
 * it stops before it returns or throws, on every path: each stdio server runs in a process group of
 * its own, ended with its connection. SIGINT or SIGTERM ends the run: the servers are stopped, a
 * CliError says it was interrupted, and, unless something else listens for the signal, it is raised
 * again as the process exits, so that the process ends by it as it would have without this handler.
 */
export async function checkCommand(
  argv: string[],
  out: (text: string) => void,
  options: { signal?: AbortSignal } = {},
): Promise<void> {
  const parsed = parseCheckOptions(argv);
  if (parsed === undefined) {
    out(`${CHECK_HELP}\n`);
    return;
  }
  const { target, timeoutMs } = parsed;
  // SIGINT and SIGTERM end the run through its signal, so that the servers are stopped first.
  const interrupted = new AbortController();
  let caught: NodeJS.Signals | undefined;
  const onSignal = (name: NodeJS.Signals) => {
    caught ??= name;
    interrupted.abort(new CliError(`interrupted by ${name}; the servers it started were stopped`, 1));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const running = timeoutSignal(Number.POSITIVE_INFINITY, { signal: [options.signal, interrupted.signal] });
  const signal = running.signal;
  const opened: CheckConnection[] = [];
  const open = async (token: string | undefined) => {
    try {
      if ('command' in target && commandMissing(target.command)) {
        throw Object.assign(new Error(`spawn ${target.command} ENOENT`), { code: 'ENOENT' });
      }
      const connection = await CheckConnection.open(target, token, signal);
      opened.push(connection);
      return connection;
    } catch (error) {
      signal?.throwIfAborted();
      const refusal = credentialsRefusal(error);
      if (refusal === undefined) {
        const reason = connectionFailure(error);
        throw new CliError(`cannot ${describeTarget(target)}: ${reason}${stdioHint(target, reason)}`, 1);
      }
      // It was reached: it answered, and refused these credentials.
      const none = token === undefined && refusal.httpStatus === 401 ? ' (no --token was given)' : '';
      throw new CliError(`cannot connect to ${labelOf(target)}: ${refusal.message}${none}`, 1);
    }
  };
  try {
    const primary = await open(parsed.token);
    let listed: ListedTool[];
    try {
      listed = await primary.listTools(timeoutMs, signal);
    } catch (error) {
      signal?.throwIfAborted();
      throw new CliError(`cannot list the tools of ${labelOf(target)}: ${connectionFailure(error)}`, 1);
    }
    const { plans, notChecked } = planTools(listed, parsed);
    const second = parsed.token2 === undefined ? undefined : await open(parsed.token2);
    const run = {
      primary,
      second,
      timeoutMs,
      concurrency: parsed.concurrency,
      rounds: parsed.rounds,
      signal,
    };
    const tools: ToolReport[] = [];
    for (const plan of plans) tools.push(await checkTool(plan, run));
    const report = checkReport(primary.label, tools, notChecked, {
      rounds: parsed.rounds,
      concurrency: parsed.concurrency,
    });
    if (parsed.junit !== undefined) {
      try {
        writeFileSync(parsed.junit, junitReport(report));
      } catch (error) {
        throw new CliError(`cannot write --junit ${parsed.junit}: ${(error as Error).message}`, 2);
      }
    }
    out(parsed.json ? `${JSON.stringify(report, null, 2)}\n` : formatCheckReport(report));
    const status = exitStatus(report);
    if (status === 1)
      throw new CliError(
        `${report.tally.fail} row${report.tally.fail === 1 ? '' : 's'} failed (${formatTally(report.tally)})`,
        1,
      );
    if (status === 3) {
      throw new CliError(
        `no row failed, but ${report.tally.inconclusive} ${report.tally.inconclusive === 1 ? 'is' : 'are'} ` +
          `inconclusive (${formatTally(report.tally)})`,
        3,
      );
    }
  } finally {
    await Promise.all(opened.map((connection) => connection.close()));
    running.dispose();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    // Raised again once the process exits (after the interruption is reported), so that it ends by the signal.
    const signalled = caught;
    if (signalled !== undefined && process.listenerCount(signalled) === 0) {
      process.once('exit', () => process.kill(process.pid, signalled));
    }
  }
}

function labelOf(target: CheckTargetSpec): string {
  return 'url' in target ? target.url : [target.command, ...target.args].join(' ');
}

/**
 * What a command that never answered may be missing: it must speak MCP on its stdin and stdout
 * (`idem serve` and `idem proxy` serve HTTP unless given --stdio). Empty for a URL or another
 * failure.
 */
export function stdioHint(target: CheckTargetSpec, reason: string): string {
  if ('url' in target || !/timed out/i.test(reason)) return '';
  return ' (a command must speak MCP on its stdin and stdout: `idem serve` and `idem proxy` need --stdio)';
}

function describeTarget(target: CheckTargetSpec): string {
  return 'url' in target ? `reach ${target.url}` : `connect to ${labelOf(target)}`;
}
