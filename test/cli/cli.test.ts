import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReferenceApp } from '../../packages/idem-cli/src/server/reference-app.js';
import { TokenRegistry } from '../../packages/idem-cli/src/server/token-registry.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import {
  CLI,
  REPO_ROOT,
  callTool,
  cleanEnv,
  cleanup,
  connectInMemory,
  ensureBuilt,
  makeTempDir,
  startServerProcess,
  track,
  type Structured,
} from '../helpers/mcp-fixtures.js';
import { requestWithHost } from '../provider/provider-fixtures.js';

interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function idem(args: string[], cwd: string = REPO_ROOT): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const proc = track(
      spawn(process.execPath, [CLI, ...args], { cwd, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    let stdout = '';
    let stderr = '';
    proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    proc.once('error', reject);
    proc.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

const grant = { principal: 'cli-user', workspaces: ['default'] };

async function createNotes(
  dbPath: string,
  keys: string[],
  options: { retentionMs?: number; clock?: FakeClock } = {},
): Promise<Structured[]> {
  const app = new ReferenceApp({ dbPath, registry: TokenRegistry.fixed(grant), ...options });
  const client = await connectInMemory(app, grant.principal);
  try {
    const results: Structured[] = [];
    for (const key of keys) {
      const result = await callTool(client, 'create_note', {
        idempotency_key: key,
        workspace: 'default',
        body: `body for ${key}`,
      });
      expect(result.sc.status).toBe('succeeded');
      results.push(result.sc);
    }
    return results;
  } finally {
    await client.close();
    await app.close();
  }
}

let dir: string;

beforeAll(() => {
  ensureBuilt();
  dir = makeTempDir('idem-cli-');
});

afterAll(cleanup);

describe('idem CLI: usage', () => {
  it('prints help with --help and exits 0', async () => {
    const run = await idem(['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: idem <command>/);
    expect(run.stdout).toContain('serve');
    expect(run.stdout).toContain('sweep');
    expect(run.stderr).toBe('');
  });

  it('exits 2 with a message on stderr for an unknown command or no command', async () => {
    const unknown = await idem(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^idem: unknown command "frobnicate"/);
    expect(unknown.stdout).toBe('');

    const none = await idem([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('missing command');
    expect(none.stdout).toBe('');
  });

  it('exits 2 for an unknown option', async () => {
    const run = await idem(['ops', 'list', '--no-such-option']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^idem: /);
  });

  it('`serve --help` prints the serve options and exits 0', async () => {
    const run = await idem(['serve', '--help'], dir);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Usage: idem serve');
    expect(run.stdout).toContain('--tokens FILE');
    expect(run.stderr).toBe('');
  });

  it('`serve --port notaport` exits 2 without serving or creating a database', async () => {
    const cwd = makeTempDir('idem-cli-port-');
    const run = await idem(['serve', '--port', 'notaport'], cwd);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--port must be an integer');
    expect(run.stderr).not.toContain('idem.serving');
    expect(existsSync(join(cwd, 'idem.sqlite'))).toBe(false);
  });

  it('`serve --sweep-max-duty 2` exits 2 without serving or creating a database', async () => {
    const cwd = makeTempDir('idem-cli-duty-');
    const run = await idem(['serve', '--sweep-max-duty', '2'], cwd);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--sweep-max-duty must be a number above 0 and at most 1');
    expect(existsSync(join(cwd, 'idem.sqlite'))).toBe(false);
  });
});

describe('idem serve: start-up checks', () => {
  const token = `tok-cli-${randomUUID()}`;
  const other = `tok-cli-${randomUUID()}`;

  it.each([
    [
      'a missing field',
      JSON.stringify({ [other]: { principal: 'a', workspaces: [] }, [token]: { principal: 'b' } }),
      'is invalid: entry 2: workspaces: required',
    ],
    [
      'a trailing comma',
      `{\n  "${token}": {"principal": "b", "workspaces": []},\n}\n`,
      'is invalid: not JSON (line 3, column 1)',
    ],
    ['an unquoted value', `{"${token}": yes}`, `is invalid: not JSON (line 1, column ${token.length + 6})`],
    [
      'a short token',
      JSON.stringify({ 'tok-15-letters!': { principal: 'b', workspaces: [] } }),
      'is invalid: entry 1: the token is shorter',
    ],
    [
      'one token listed twice (the last would win)',
      `{"${token}": {"principal": "bob", "workspaces": []}, "${token}": {"principal": "alice", "workspaces": []}}`,
      'is invalid: entry 2 lists the token of entry 1 again (line 1, column',
    ],
    [
      'a principal with a lone surrogate',
      JSON.stringify({ [token]: { principal: 'mallory\ud800', workspaces: [] } }),
      'is invalid: entry 1: principal: must be well-formed Unicode',
    ],
  ])(
    'refuses a tokens file with %s: exit 1, the entry or line named, no token printed',
    async (_l, text, expected) => {
      const cwd = makeTempDir('idem-cli-tokens-');
      const tokensPath = join(cwd, 'tokens.json');
      writeFileSync(tokensPath, text);
      const run = await idem(['serve', '--tokens', tokensPath, '--port', '0'], cwd);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`idem: invalid_argument: tokens file ${tokensPath} ${expected}`);
      expect(run.stderr).not.toContain(token.slice(8));
      expect(run.stderr).not.toContain(other.slice(8));
      expect(run.stderr).not.toContain('tok-15-letters!');
      expect(existsSync(join(cwd, 'idem.sqlite'))).toBe(false);
    },
  );

  it('embeds a demo provider without /_faults, which refuses a foreign Host', async () => {
    const cwd = makeTempDir('idem-cli-embedded-');
    const srv = await startServerProcess({ args: ['--db', join(cwd, 'db.sqlite')] });
    try {
      const line = srv.logs().find((l) => l.event === 'idem.embedded_provider');
      const url = String(line?.url);
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await fetch(`${url}/health`)).status).toBe(200);
      const arm = await fetch(`${url}/_faults`, { method: 'POST', body: JSON.stringify({ kind: 'exit' }) });
      expect(arm.status).toBe(404);
      expect((await fetch(`${url}/_faults`)).status).toBe(404);
      const port = new URL(url).port;
      expect((await requestWithHost(url, 'GET', '/health', `rebound.example:${port}`)).status).toBe(421);
    } finally {
      await srv.kill();
    }
  });
});

describe('idem ops', () => {
  let dbPath: string;
  let created: Structured[];

  beforeAll(async () => {
    dbPath = join(dir, 'ops.sqlite');
    created = await createNotes(dbPath, ['ops-key-1', 'ops-key-2']);
  });

  it('exits 1 when the database does not exist', async () => {
    const run = await idem(['ops', 'list', '--db', join(dir, 'missing.sqlite')]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('no database at');
    expect(existsSync(join(dir, 'missing.sqlite'))).toBe(false);
  });

  it('lists both operations, newest first, and filters by status', async () => {
    const [first, second] = created;
    const run = await idem(['ops', 'list', '--db', dbPath]);
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^OPERATION\s+STATUS\s+TOOL\s+PRINCIPAL\s+WORKSPACE\s+RESOURCE\s+CREATED$/);
    expect(lines).toHaveLength(3);
    expect(lines[1]?.startsWith(`${second?.operation_id} `)).toBe(true);
    expect(lines[2]?.startsWith(`${first?.operation_id} `)).toBe(true);
    expect(lines[2]).toContain(first?.resource_id);
    for (const line of lines.slice(1))
      expect(line).toMatch(/succeeded\s+create_note@v1\s+cli-user\s+default/);

    const succeeded = await idem(['ops', 'list', '--db', dbPath, '--status', 'succeeded', '--json']);
    expect(succeeded.code).toBe(0);
    const rows = JSON.parse(succeeded.stdout) as { operation_id: string; resource_id: string }[];
    expect(rows.map((r) => r.operation_id).sort()).toEqual(
      [first?.operation_id, second?.operation_id].sort(),
    );

    const failed = await idem(['ops', 'list', '--db', dbPath, '--status', 'failed']);
    expect(failed.code).toBe(0);
    expect(failed.stdout).not.toContain(first?.operation_id);
    expect(failed.stdout).toContain('(no operations)');

    const limited = await idem(['ops', 'list', '--db', dbPath, '--limit', '1', '--json']);
    expect(JSON.parse(limited.stdout)).toHaveLength(1);

    const badLimit = await idem(['ops', 'list', '--db', dbPath, '--limit', '0']);
    expect(badLimit.code).toBe(2);
  });

  it('shows one operation as JSON, and exits 1 for an unknown id', async () => {
    const [first] = created;
    const run = await idem(['ops', 'show', first?.operation_id as string, '--db', dbPath]);
    expect(run.code).toBe(0);
    const shown = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({
      operation_id: first?.operation_id,
      resource_id: first?.resource_id,
      status: 'succeeded',
      operation: 'create_note',
      workspace: 'default',
      principal: 'cli-user',
      idempotency_key: 'ops-key-1',
      result: { operation_id: first?.operation_id, resource_id: first?.resource_id },
    });
    expect(JSON.stringify(shown)).not.toContain('body for');

    const missing = await idem(['ops', 'show', 'nope', '--db', dbPath]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no operation nope');
    expect(missing.stdout).toBe('');

    const noId = await idem(['ops', 'show', '--db', dbPath]);
    expect(noId.code).toBe(2);
  });
});

describe('idem sweep', () => {
  it('turns expired receipts into tombstones and reports the counts as JSON', async () => {
    const dbPath = join(dir, 'sweep.sqlite');
    // Receipts written a minute ago with a 1 ms retention: expired, but their tombstones are not.
    const clock = new FakeClock(Date.now() - 60_000);
    const [expired] = await createNotes(dbPath, ['sweep-1', 'sweep-2'], { retentionMs: 1, clock });

    const run = await idem(['sweep', '--db', dbPath]);
    expect(run.code).toBe(0);
    const counts = JSON.parse(run.stdout) as {
      tombstoned: number;
      tombstones_deleted: number;
      outbox_deleted: number;
      batches: number;
    };
    expect(counts).toEqual({ tombstoned: 2, tombstones_deleted: 0, outbox_deleted: 0, batches: 1 });

    const again = await idem(['sweep', '--db', dbPath]);
    expect(JSON.parse(again.stdout)).toEqual({
      tombstoned: 0,
      tombstones_deleted: 0,
      outbox_deleted: 0,
      batches: 0,
    });

    const list = await idem(['ops', 'list', '--db', dbPath]);
    expect(list.stdout).not.toContain(expired?.operation_id);
    expect(list.stdout).toContain('(no operations)');

    // The swept key is refused, not executed again.
    const app = new ReferenceApp({ dbPath, registry: TokenRegistry.fixed(grant) });
    const client = await connectInMemory(app, grant.principal);
    try {
      const retry = await callTool(client, 'create_note', {
        idempotency_key: 'sweep-1',
        workspace: 'default',
        body: 'body for sweep-1',
      });
      expect(retry.sc.error?.code).toBe('key_expired');
      const notes = app.db.prepare('SELECT count(*) AS n FROM notes').get();
      expect(notes).toEqual({ n: 2 });
    } finally {
      await client.close();
      await app.close();
    }
  });

  it('accepts --max-duty 1 and refuses a share outside (0, 1] with exit 2', async () => {
    const dbPath = join(dir, 'sweep-duty.sqlite');
    const clock = new FakeClock(Date.now() - 60_000);
    await createNotes(dbPath, ['duty-1', 'duty-2', 'duty-3'], { retentionMs: 1, clock });
    const run = await idem(['sweep', '--db', dbPath, '--max-duty', '1', '--batch-size', '1']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      tombstoned: 3,
      tombstones_deleted: 0,
      outbox_deleted: 0,
      batches: 3,
    });
    for (const bad of ['0', '1.5', '-0.5', 'half']) {
      const refused = await idem(['sweep', '--db', dbPath, `--max-duty=${bad}`]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('--max-duty must be a number above 0 and at most 1');
    }
  });

  it('exits 1 when the database does not exist', async () => {
    const run = await idem(['sweep', '--db', join(dir, 'nothing-here.sqlite')]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('no database at');
  });
});
