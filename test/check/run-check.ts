import { join } from 'node:path';
import { checkCommand } from '../../packages/idem-cli/src/cli/check-command.js';
import type { CheckReport } from '../../packages/idem-cli/src/cli/check/check-report.js';
import type { ToolReport } from '../../packages/idem-cli/src/cli/check/check-tool.js';
import type { RowId, RowResult } from '../../packages/idem-cli/src/cli/check/verdict.js';
import { CliError } from '../../packages/idem-cli/src/cli/cli-error.js';
import { REPO_ROOT } from '../helpers/mcp-fixtures.js';

export const FIXTURES = join(REPO_ROOT, 'test', 'check', 'fixtures');
export const NAIVE = join(FIXTURES, 'naive-server.mjs');
export const SCRIPTED = join(FIXTURES, 'scripted-server.mjs');

export interface CheckResult {
  readonly output: string;
  readonly exitCode: number;
  readonly error?: string;
}

/** Runs `idem check` in-process: its output and its exit status as main.ts would set it. */
export async function check(argv: string[]): Promise<CheckResult> {
  let output = '';
  try {
    await checkCommand(argv, (text) => (output += text));
    return { output, exitCode: 0 };
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    return { output, exitCode: error.exitCode, error: error.message };
  }
}

export function reportOf(result: CheckResult): CheckReport {
  return JSON.parse(result.output) as CheckReport;
}

export function toolOf(result: CheckResult, tool: string): ToolReport {
  const found = reportOf(result).tools.find((t) => t.tool === tool);
  if (found === undefined) throw new Error(`no tool ${tool} in the report:\n${result.output}`);
  return found;
}

/** A tool's rows by id. */
export function rowsOf(result: CheckResult, tool: string): Partial<Record<RowId, RowResult>> {
  return Object.fromEntries(toolOf(result, tool).rows.map((row) => [row.row, row]));
}

/** A tool's verdicts, in table order: [[row, result], …]. */
export function verdictsOf(result: CheckResult, tool: string): Array<[RowId, RowResult['result']]> {
  return toolOf(result, tool).rows.map((row) => [row.row, row.result]);
}
