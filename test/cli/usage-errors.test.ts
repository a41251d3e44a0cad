import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/durable-fixtures.js';
import { cleanup, ensureBuilt, freePort, makeTempDir } from '../helpers/mcp-fixtures.js';

const FORMS = '(500ms, 5s, 2m, 24h, 30d)';

let dir: string;

beforeAll(() => {
  ensureBuilt();
  dir = makeTempDir('idem-usage-');
});

afterAll(cleanup);

describe('idem CLI: usage errors exit 2 and say what is accepted', () => {
  it('a duration without a unit', async () => {
    const db = join(dir, 'never.sqlite');
    const serve = await runCli(['serve', '--retention', '24', '--db', db]);
    expect(serve.code).toBe(2);
    expect(serve.stderr).toBe(
      `idem: --retention: "24" has no unit; a duration is an integer and a unit ${FORMS}; ` +
        'see "idem serve --help"\n',
    );
    expect(existsSync(db)).toBe(false);

    const check = await runCli(['check', '--url', 'http://127.0.0.1/mcp', '--timeout', '5']);
    expect(check.code).toBe(2);
    expect(check.stderr).toContain(`--timeout: "5" has no unit`);

    const sweep = await runCli(['sweep', '--db', db, '--tombstone-retention', '30']);
    expect(sweep.code).toBe(2);
    expect(sweep.stderr).toContain(`--tombstone-retention: "30" has no unit`);

    const provider = await runCli(['provider', '--mode', 'key', '--key-retention', '24']);
    expect(provider.code).toBe(2);
    expect(provider.stderr).toContain(`--key-retention: "24" has no unit`);
  });

  it('`idem ops` without a subcommand, or with an unknown one', async () => {
    const none = await runCli(['ops']);
    expect(none.code).toBe(2);
    expect(none.stderr).toBe(
      'idem: ops needs a subcommand: list, show, resolve, cancel, dead-letters or requeue; see "idem ops --help"\n',
    );

    const unknown = await runCli(['ops', 'frob']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      'idem: unknown ops subcommand "frob": use list, show, resolve, cancel, dead-letters or requeue; ' +
        'see "idem ops --help"\n',
    );
  });

  it('`idem ops list --status` with a state that does not exist, before any database is opened', async () => {
    const run = await runCli(['ops', 'list', '--status', 'bogus', '--db', join(dir, 'missing.sqlite')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      'idem: --status must be accepted, running, succeeded, failed, cancel_requested, cancelled or ' +
        'outcome_unknown, got "bogus"; see "idem ops --help"\n',
    );
  });
});

describe('idem CLI: errors name what they are about', () => {
  it('a refused `check --url` names the URL and the reason (exit 1)', async () => {
    const url = `http://127.0.0.1:${await freePort()}/mcp`;
    const run = await runCli(['check', '--url', url, '--timeout', '2s']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`idem: cannot reach ${url}: connection refused (ECONNREFUSED)\n`);
  });
});
