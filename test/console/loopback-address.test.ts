import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  isLoopbackAddress,
  resolvesToLoopback,
} from '../../packages/idem-cli/src/server/loopback-address.js';
import { runCli } from '../helpers/durable-fixtures.js';
import { cleanup, ensureBuilt, makeTempDir } from '../helpers/mcp-fixtures.js';

let dir: string;

beforeAll(() => {
  ensureBuilt();
  dir = makeTempDir('idem-loopback-');
});

afterAll(cleanup);

describe('loopback is decided on the resolved address', () => {
  it('takes IP literals of 127.0.0.0/8 and ::1 (also IPv4-mapped), nothing else', () => {
    for (const address of ['127.0.0.1', '127.5.6.7', '::1', '[::1]', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1'])
      expect(isLoopbackAddress(address), address).toBe(true);
    for (const address of [
      '10.0.0.1',
      '0.0.0.0',
      '::',
      '::ffff:10.0.0.1',
      '127.0.0.1.example.com',
      'localhost',
    ])
      expect(isLoopbackAddress(address), address).toBe(false);
  });

  it('takes a name only when every address it resolves to is loopback', async () => {
    expect(await resolvesToLoopback('127.0.0.1')).toBe(true);
    expect(await resolvesToLoopback('localhost')).toBe(true);
    // A name that merely starts like a loopback address is a name: here it does not resolve at all.
    expect(await resolvesToLoopback('127.0.0.1.example.com')).toBe(false);
    expect(await resolvesToLoopback('127.0.0.1.invalid')).toBe(false);
    expect(await resolvesToLoopback('0.0.0.0')).toBe(false);
  });

  it('idem console refuses dev mode (no sign-in) on a name that only starts with 127.', async () => {
    const run = await runCli(['console', '--host', '127.0.0.1.invalid', '--db', join(dir, 'none.sqlite')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('the console on 127.0.0.1.invalid needs operator credentials');
  });

  it('idem serve refuses dev mode (no --tokens) on a name that only starts with 127.', async () => {
    const run = await runCli([
      'serve',
      '--host',
      '127.0.0.1.invalid',
      '--port',
      '0',
      '--db',
      join(dir, 's.sqlite'),
    ]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(
      'dev mode (no --tokens) listens on loopback only; refusing host 127.0.0.1.invalid',
    );
  });
});
