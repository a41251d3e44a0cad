import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HTTP_OPTIONS, httpSettings, sizeOption } from '../../packages/idem-cli/src/cli/http-options.js';
import { DEFAULT_HTTP_LIMITS } from '../../packages/idem-cli/src/server/http-limits.js';
import { CLI, cleanEnv, cleanup, ensureBuilt, makeTempDir } from '../helpers/mcp-fixtures.js';

beforeAll(() => ensureBuilt());
afterAll(cleanup);

/** The flag values parseArgs gives when only `given` is on the command line. */
function values(given: Record<string, string | string[]> = {}) {
  const defaults = Object.fromEntries(
    Object.entries(HTTP_OPTIONS)
      .filter(([, spec]) => 'default' in spec)
      .map(([name, spec]) => [name, (spec as { default: string }).default]),
  );
  return { ...defaults, ...given } as Parameters<typeof httpSettings>[0];
}

function usageError(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect((error as { exitCode?: number }).exitCode).toBe(2);
    return (error as Error).message;
  }
  throw new Error('no usage error');
}

describe('idem serve HTTP flags', () => {
  it('defaults to 1 MiB bodies, 64 MiB in flight, 10 s for headers and 30 s for a request', () => {
    const settings = httpSettings(values(), '127.0.0.1');
    expect(settings.limits).toEqual(DEFAULT_HTTP_LIMITS);
    expect(DEFAULT_HTTP_LIMITS).toEqual({
      maxBodyBytes: 1024 * 1024,
      maxBufferedBytes: 64 * 1024 * 1024,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
    });
    expect(settings.oauth).toBeUndefined();
    expect(settings.allowedHosts).toBeUndefined();
  });

  it('parses sizes, repeated and comma-separated lists, and the JWT flags', () => {
    expect([
      sizeOption('x', '4096'),
      sizeOption('x', '512KiB'),
      sizeOption('x', '2mib'),
      sizeOption('x', '1GiB'),
    ]).toEqual([4096, 512 * 1024, 2 * 1024 * 1024, 1024 ** 3]);
    const settings = httpSettings(
      values({
        'allowed-host': ['a.example, b.example', 'c.example'],
        'jwt-issuer': 'https://issuer.example',
        'jwt-jwks-url': 'https://issuer.example/jwks',
        'jwt-scope': ['mcp', 'notes'],
      }),
      '127.0.0.1',
    );
    expect(settings.allowedHosts).toEqual(['a.example', 'b.example', 'c.example']);
    expect(settings.oauth).toMatchObject({
      authorizationServers: ['https://issuer.example'],
      requiredScopes: ['mcp', 'notes'],
    });
    expect(settings.oauth?.audience).toBeUndefined();
  });

  it('refuses bad values with a usage error naming the flag', () => {
    expect(usageError(() => sizeOption('--max-body', '1MB'))).toContain('--max-body');
    expect(usageError(() => sizeOption('--max-body', '0'))).toContain('--max-body');
    expect(
      usageError(() => httpSettings(values({ 'max-body': '2MiB', 'max-buffered': '1MiB' }), '127.0.0.1')),
    ).toContain('--max-buffered');
    expect(
      usageError(() =>
        httpSettings(values({ 'headers-timeout': '40s', 'request-timeout': '30s' }), '127.0.0.1'),
      ),
    ).toContain('--headers-timeout');
    expect(
      usageError(() => httpSettings(values({ 'jwt-issuer': 'https://i.example' }), '127.0.0.1')),
    ).toContain('go together');
    expect(usageError(() => httpSettings(values({ 'jwt-scope': ['mcp'] }), '127.0.0.1'))).toContain(
      '--jwt-scope',
    );
    const jwt = { 'jwt-issuer': 'http://issuer.example', 'jwt-jwks-url': 'https://issuer.example/jwks' };
    expect(usageError(() => httpSettings(values(jwt), '127.0.0.1'))).toContain('https');
    const https = { ...jwt, 'jwt-issuer': 'https://issuer.example' };
    expect(usageError(() => httpSettings(values(https), '0.0.0.0'))).toContain('--jwt-audience');
    expect(
      usageError(() => httpSettings(values({ ...https, 'jwt-audience': 'not a url' }), '127.0.0.1')),
    ).toContain('--jwt-audience');
  });

  it('`serve --max-body 1MB` exits 2 before creating a database', async () => {
    const cwd = makeTempDir('idem-cli-http-');
    const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [CLI, 'serve', '--max-body', '1MB'],
        { cwd, env: cleanEnv() },
        (error, _out, stderr) => resolve({ code: error === null ? 0 : (error.code as number), stderr }),
      );
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--max-body must be a size');
    expect(existsSync(join(cwd, 'idem.sqlite'))).toBe(false);
  });
});
