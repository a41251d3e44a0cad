import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/durable-fixtures.js';
import { REPO_ROOT, cleanup, ensureBuilt, makeTempDir } from '../helpers/mcp-fixtures.js';

let dir: string;

beforeAll(() => {
  ensureBuilt();
  dir = makeTempDir('idem-conventions-');
});

afterAll(cleanup);

/** Every command and subcommand with its own line of `--help`, and how its usage begins. */
const HELPS: ReadonlyArray<readonly [string[], string]> = [
  [[], 'Usage: idem <command>'],
  [['serve'], 'Usage: idem serve'],
  [['proxy'], 'Usage: idem proxy'],
  [['worker'], 'Usage: idem worker'],
  [['provider'], 'Usage: idem provider'],
  [['check'], 'Usage: idem check'],
  [['migrate'], 'Usage: idem migrate'],
  [['sweep'], 'Usage: idem sweep'],
  [['ops'], 'Usage: idem ops'],
  [['ops', 'list'], 'Usage: idem ops'],
  [['ops', 'show'], 'Usage: idem ops'],
  [['ops', 'resolve'], 'Usage: idem ops'],
  [['ops', 'dead-letters'], 'Usage: idem ops'],
  [['ops', 'requeue'], 'Usage: idem ops'],
];

describe('idem CLI conventions: help on stdout, exit 0', () => {
  it.each(HELPS)('idem %j --help', async (command, usage) => {
    for (const flag of ['--help', '-h']) {
      const run = await runCli([...command, flag]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout.startsWith(usage), run.stdout.slice(0, 80)).toBe(true);
      expect(run.stderr).toBe('');
    }
  });
});

/** The entry of `flag` in a help text: its line and the description lines under it, to the next flag. */
function entryOf(help: string, flag: string): string {
  const lines = help.split('\n');
  const start = lines.findIndex((line) => line.startsWith(`  ${flag} `) || line === `  ${flag}`);
  expect(start, `${flag} in the help`).toBeGreaterThanOrEqual(0);
  const next = lines.findIndex((line, i) => i > start && !/^ {29}\S/.test(line));
  return lines.slice(start, next === -1 ? lines.length : next).join('\n');
}

describe('idem CLI conventions: each help line sits under the option it is about', () => {
  it('serve: the embedded provider under --provider-url, the unlisted tools under --commands', async () => {
    const help = (await runCli(['serve', '--help'])).stdout;
    expect(entryOf(help, '--provider-url URL')).toContain('in-process demo provider is started');
    expect(entryOf(help, '--outbox-max-attempts N')).not.toContain('provider');
    expect(entryOf(help, '--commands FILE')).toContain('no command tool is listed');
  });

  it("worker: --provider-url is required, and the servers' file goes under --commands", async () => {
    const help = (await runCli(['worker', '--help'])).stdout;
    expect(entryOf(help, '--provider-url URL')).toContain('required');
    expect(entryOf(help, '--commands FILE')).toContain("the servers' file");
    expect(entryOf(help, '--command-workers N')).not.toContain('servers');
  });

  it('ops, sweep and migrate list every option they take, each under its own line', async () => {
    const ops = (await runCli(['ops', '--help'])).stdout;
    for (const flag of [
      '--db PATH|URL',
      '--status S',
      '--limit N',
      '--json',
      '--retention DUR',
      '-h, --help',
    ])
      expect(entryOf(ops, flag)).not.toBe('');
    expect(entryOf(ops, '--correct')).toContain('never the other way');
    expect(entryOf(ops, '--result-json JSON')).toContain('payment_id');
    const sweep = (await runCli(['sweep', '--help'])).stdout;
    for (const flag of ['--db PATH|URL', '--retention DUR', '--batch-size N', '-h, --help'])
      expect(entryOf(sweep, flag)).not.toBe('');
    expect(entryOf(sweep, '--max-duty D')).toContain('1 never waits');
    expect(entryOf((await runCli(['migrate', '--help'])).stdout, '-h, --help')).toContain('show this help');
  });
});

describe('idem CLI conventions: --version', () => {
  it('prints the version of package.json on stdout and exits 0 (--version and -v)', async () => {
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    for (const flag of ['--version', '-v']) {
      const run = await runCli([flag]);
      expect(run).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    }
  });
});

describe('idem CLI conventions: a usage error names the help to read (exit 2, nothing on stdout)', () => {
  const db = () => join(dir, 'never.sqlite');
  it.each([
    [['frob'], 'idem: unknown command "frob"; see "idem --help"'],
    [
      [],
      'idem: missing command: serve, proxy, ops, console, check, migrate, sweep, worker or provider; see "idem --help"',
    ],
    [
      ['serve', '--port', 'x'],
      'idem: --port must be an integer from 0 to 65535, got "x"; see "idem serve --help"',
    ],
    [
      ['worker', '--db', 'ignored.sqlite'],
      'idem: idem worker needs --provider-url; see "idem worker --help"',
    ],
    [['provider'], 'idem: --mode is required: key, reference or none; see "idem provider --help"'],
    [['check'], 'idem: give exactly one target: --url URL, or -- COMMAND [ARGS...]; see "idem check --help"'],
    [['proxy'], 'idem: missing upstream: --upstream URL or -- COMMAND ARGS; see "idem proxy --help"'],
    [
      ['proxy', '--upstream', 'ftp://x', '--', 'node'],
      'idem: give the upstream either as --upstream URL or as -- COMMAND ARGS, not both; see "idem proxy --help"',
    ],
    [
      ['proxy', '--upstream-key', 'nokey', '--', 'node'],
      'idem: --upstream-key takes TOOL=ARGUMENT, got "nokey"; see "idem proxy --help"',
    ],
    [
      ['migrate', '--db-schema', 'x'],
      'idem: --db-schema applies to PostgreSQL only; see "idem migrate --help"',
    ],
    [
      ['sweep', '--max-duty', '3'],
      'idem: --max-duty must be a number above 0 and at most 1, got "3"; see "idem sweep --help"',
    ],
    [
      ['ops'],
      'idem: ops needs a subcommand: list, show, resolve, cancel, dead-letters or requeue; see "idem ops --help"',
    ],
    [
      ['ops', 'frob', '--help'],
      'idem: unknown ops subcommand "frob": use list, show, resolve, cancel, dead-letters or requeue; ' +
        'see "idem ops --help"',
    ],
    [['ops', 'requeue'], 'idem: usage: idem ops requeue <id>; see "idem ops --help"'],
  ])('idem %j', async (args, line) => {
    const run = await runCli(args.map((arg) => (arg === 'ignored.sqlite' ? db() : arg)));
    expect(run).toEqual({ code: 2, stdout: '', stderr: `${line}\n` });
  });

  it('an unknown option (node:util parseArgs) points to the help too', async () => {
    const run = await runCli(['ops', 'list', '--no-such-option']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^idem: Unknown option '--no-such-option'\..*; see "idem ops --help"\n$/);
  });

  it('a runtime failure (exit 1) does not point to the help', async () => {
    const run = await runCli(['ops', 'list', '--db', join(dir, 'missing.sqlite')]);
    expect(run.code).toBe(1);
    expect(run.stderr).not.toContain('--help');
  });
});
