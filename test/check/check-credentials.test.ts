import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CLI,
  cleanEnv,
  cleanup,
  ensureBuilt,
  makeTempDir,
  startServerProcess,
} from '../helpers/mcp-fixtures.js';
import { REFUSALS, startRefusingServer, type RefusingServer } from '../helpers/refusing-server.js';
import { check } from './run-check.js';

const servers: RefusingServer[] = [];
beforeAll(ensureBuilt);
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});
afterAll(cleanup);

/** The built CLI (`node dist/cli/main.js check …`): its exit status and stderr. */
function runCheck(args: string[]): Promise<{ exitCode: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, 'check', ...args],
      { env: cleanEnv(), timeout: 30_000 },
      (error, _stdout, stderr) => {
        const code = (error as { code?: unknown } | null)?.code;
        resolve({ exitCode: typeof code === 'number' ? code : error === null ? 0 : -1, stderr });
      },
    );
  });
}

function refused(status: number, reason: string | undefined): string {
  return `the server refused the credentials (HTTP ${status})${reason === undefined ? '' : `: ${reason}`}`;
}

describe('idem check against a server that refuses the credentials: exit 1, the status and the refusal', () => {
  it.each(Object.entries(REFUSALS))('%s (in process)', async (_, refusal) => {
    const server = await startRefusingServer(refusal);
    servers.push(server);

    const result = await check(['--url', server.url, '--token', 'not-a-valid-token', '--timeout', '5s']);

    expect(result).toEqual({
      output: '',
      exitCode: 1,
      error: `cannot connect to ${server.url}: ${refused(refusal.status, refusal.reason)}`,
    });
    expect(server.requests).toHaveLength(1);
  });

  it.each([REFUSALS.idem401, REFUSALS.jsonRpc403])('HTTP $status (the built CLI)', async (refusal) => {
    const server = await startRefusingServer(refusal);
    servers.push(server);

    const result = await runCheck(['--url', server.url, '--token', 'not-a-valid-token', '--timeout', '5s']);

    expect(result).toEqual({
      exitCode: 1,
      stderr: `idem: cannot connect to ${server.url}: ${refused(refusal.status, refusal.reason)}\n`,
    });
    expect(server.requests).toHaveLength(1);
  });

  it('a 401 without --token says that none was given', async () => {
    const server = await startRefusingServer(REFUSALS.idem401);
    servers.push(server);
    expect(await check(['--url', server.url, '--timeout', '5s'])).toEqual({
      output: '',
      exitCode: 1,
      error: `cannot connect to ${server.url}: ${refused(401, REFUSALS.idem401.reason)} (no --token was given)`,
    });
  });

  it('the reference server with a tokens file, given an unknown token', async () => {
    const dir = makeTempDir('idem-check-credentials-');
    const tokens = join(dir, 'tokens.json');
    writeFileSync(
      tokens,
      JSON.stringify({ 'alice-token-0123456789': { principal: 'alice', workspaces: ['w'] } }),
    );
    const idem = await startServerProcess({ args: ['--db', join(dir, 'db.sqlite'), '--tokens', tokens] });

    const result = await runCheck([
      '--url',
      idem.url,
      '--token',
      'wrong-token-0123456789',
      '--timeout',
      '5s',
    ]);

    expect(result).toEqual({
      exitCode: 1,
      stderr: `idem: cannot connect to ${idem.url}: ${refused(401, 'a valid bearer token is required')}\n`,
    });
  });
});
