import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/durable-fixtures.js';
import { cleanup, ensureBuilt, makeTempDir } from '../helpers/mcp-fixtures.js';
import { durableExecutor, openTestStore, startDurable } from '../helpers/store-fixtures.js';

let dir: string;

beforeAll(() => {
  ensureBuilt();
  dir = makeTempDir('idem-cli-cancel-');
});

afterAll(cleanup);

describe('idem ops cancel', () => {
  it('requests a cancel with who and why in the audit; refuses without a reason and once final', async () => {
    const dbPath = join(dir, 'cancel.sqlite');
    const t = openTestStore({ path: dbPath });
    const op = await startDurable(durableExecutor(t.store), { key: 'deploy-c' }).finally(() => t.close());
    const id = op.operationId;

    const noReason = await runCli(['ops', 'cancel', id, '--db', dbPath]);
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toContain('cancel needs --reason TEXT');

    const done = await runCli([
      'ops',
      'cancel',
      id,
      '--reason',
      'wrong version',
      '--by',
      'bob',
      '--db',
      dbPath,
    ]);
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({
      status: 'cancel_requested',
      operation_id: id,
      cancel: 'requested',
      audit: [
        { action: 'cancel', by: 'bob', from: 'accepted', to: 'cancel_requested', reason: 'wrong version' },
      ],
    });

    const again = await runCli(['ops', 'cancel', id, '--reason', 'again', '--db', dbPath]);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ cancel: 'already_requested' });

    const missing = await runCli(['ops', 'cancel', 'op_nope', '--reason', 'x', '--db', dbPath]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no operation op_nope');
  });
});

describe('idem console', () => {
  it('refuses to start on a non-loopback interface without operator credentials', async () => {
    const run = await runCli(['console', '--host', '0.0.0.0', '--db', join(dir, 'none.sqlite')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('the console on 0.0.0.0 needs operator credentials');
  });
});
