import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  childEnvironment,
  DEFAULT_COMMAND_TIMEOUT_MS,
  loadCommandsFile,
  parseCommands,
} from '../../packages/idem/src/commands/command-spec.js';
import { cleanup, makeTempDir } from '../helpers/mcp-fixtures.js';

afterAll(cleanup);

const base = makeTempDir('idem-cmdspec-');

function refusal(value: unknown): string {
  try {
    parseCommands(value, base);
  } catch (error) {
    expect((error as { code?: string }).code).toBe('invalid_argument');
    return (error as Error).message;
  }
  throw new Error('accepted');
}

describe('parseCommands: strict', () => {
  it('a full command, and the defaults', () => {
    mkdirSync(join(base, 'app'), { recursive: true });
    const set = parseCommands(
      {
        migrate: {
          argv: ['npm', 'run', 'migrate'],
          cwd: 'app',
          timeout: '10m',
          rerunnable: false,
          description: 'Apply pending migrations',
          env: { NODE_ENV: 'production' },
        },
        'lint.all': { argv: ['true'] },
      },
      base,
    );
    expect(set.get('migrate')).toEqual({
      name: 'migrate',
      argv: ['npm', 'run', 'migrate'],
      cwd: join(base, 'app'),
      timeoutMs: 600_000,
      rerunnable: false,
      description: 'Apply pending migrations',
      env: { NODE_ENV: 'production' },
    });
    expect(set.get('lint.all')).toMatchObject({
      cwd: base,
      timeoutMs: DEFAULT_COMMAND_TIMEOUT_MS,
      rerunnable: false,
    });
  });

  it.each([
    [[], 'must be a JSON object of named commands'],
    [{}, 'declares no command'],
    [{ 'bad name': { argv: ['x'] } }, 'command name "bad name" must be'],
    [{ a: ['x'] }, 'command "a" must be an object'],
    [{ a: { argv: 'echo hi' } }, 'argv must be a non-empty array of strings'],
    [{ a: { argv: [] } }, 'argv must be a non-empty array of strings'],
    [{ a: { argv: [''] } }, 'argv[0] (the program) must not be empty'],
    [{ a: { argv: ['x\0'] } }, 'must not contain NUL'],
    [{ a: { argv: ['x'], shell: true } }, 'unknown field "shell"'],
    [{ a: { argv: ['x'], timeout: '10' } }, 'timeout: "10" has no unit'],
    [{ a: { argv: ['x'], timeout: 600 } }, 'timeout must be a duration string'],
    [{ a: { argv: ['x'], cwd: 'missing-dir' } }, 'is not a directory'],
    [{ a: { argv: ['x'], rerunnable: 'yes' } }, 'rerunnable must be true or false'],
    [{ a: { argv: ['x'], env: { 'A-B': 'x' } } }, 'env name "A-B" is not a variable name'],
    [{ a: { argv: ['x'], env: { A: 1 } } }, 'env.A must be a string'],
  ])('%j is refused: %s', (value, message) => {
    expect(refusal(value)).toContain(message);
  });

  it('loadCommandsFile names the file', () => {
    const path = join(base, 'bad.json');
    writeFileSync(path, '{"a": ');
    expect(() => loadCommandsFile(path)).toThrow(`${path} is not JSON`);
    writeFileSync(path, '{"a": {"argv": ["x"], "timeout": "5"}}');
    expect(() => loadCommandsFile(path)).toThrow(`${path}: command "a": timeout: "5" has no unit`);
    expect(() => loadCommandsFile(join(base, 'none.json'))).toThrow('cannot read');
  });
});

describe('childEnvironment', () => {
  it('PATH, HOME and LANG from the server, then the declared env; nothing else', () => {
    const [spec] = parseCommands({ a: { argv: ['x'], env: { APP: '1', LANG: 'C.UTF-8' } } }, base).values();
    const env = childEnvironment(spec!, {
      PATH: '/usr/bin',
      HOME: '/home/idem',
      LANG: 'en_US.UTF-8',
      IDEM_TOKEN: 'secret',
      DATABASE_URL: 'postgres://u:p@h/db',
      AWS_SECRET_ACCESS_KEY: 'x',
    });
    expect(env).toEqual({ PATH: '/usr/bin', HOME: '/home/idem', LANG: 'C.UTF-8', APP: '1' });
  });
});
