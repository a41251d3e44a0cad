// The public surface is recorded in api/surface.txt (scripts/surface.mjs writes it from the source
// of every package.json "exports" entry): a change to what users can import is a visible diff in
// review, and every exported function, class and constant carries a doc comment.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = join(REPO_ROOT, 'scripts', 'surface.mjs');

interface Check {
  code: number | null;
  stderr: string;
}

/** Runs `node scripts/surface.mjs` with `args`; resolves with its exit code and stderr. */
function surface(...args: string[]): Promise<Check> {
  return new Promise((resolve) => {
    execFile(process.execPath, [SCRIPT, ...args], { cwd: REPO_ROOT }, (error, _stdout, stderr) => {
      resolve({ code: error === null ? 0 : (error.code as number | null), stderr });
    });
  });
}

/** `node scripts/surface.mjs --check` with `args`. */
function check(...args: string[]): Promise<Check> {
  return surface('--check', ...args);
}

const temporary: string[] = [];
afterEach(() => {
  for (const dir of temporary.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A directory of its own under the system's temporary directory, removed after the test. */
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'idem-surface-'));
  temporary.push(dir);
  return dir;
}

// Each check builds a TypeScript program over the package's source: seconds, more on a loaded machine.
describe('api/surface.txt records the public surface', { timeout: 90_000 }, () => {
  it('is what the entries export today, and every exported name is documented (values only in the adapters and ORM entries)', async () => {
    const result = await check();
    // On failure the message is the script's: which names changed, or which lack a doc comment.
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('a changed surface fails with one line per name that differs, and says how to update the record', async () => {
    const recorded = readFileSync(join(REPO_ROOT, 'api', 'surface.txt'), 'utf8');
    expect(recorded).toContain('\nclass Executor\n');
    const edited = recorded.replace('\nclass Executor\n', '\nfunction commitOnce\n');
    const record = join(tempDir(), 'surface.txt');
    writeFileSync(record, edited);

    const result = await check('--record', record);

    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'The public surface changed: run npm run surface and commit api/surface.txt.\n' +
        '- idem: function commitOnce\n' +
        '+ idem: class Executor\n',
    );
  });

  it('an exported value without a doc comment fails, naming it; a type too, except in the adapter and ORM entries', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'src', 'other'), { recursive: true });
    const entry = (name: string) => ({ types: `./dist/${name}.d.ts`, default: `./dist/${name}.js` });
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ exports: { '.': entry('index'), './sqlite': entry('other/index') } }),
    );
    writeFileSync(
      join(dir, 'src', 'index.ts'),
      [
        '/** Says what it promises. */',
        'export function documented(): void {}',
        'export function bare(): void {}',
        'export class Bare {}',
        'export const BARE = 1;',
        'export interface Shape { readonly x: number }',
      ].join('\n'),
    );
    writeFileSync(
      join(dir, 'src', 'other', 'index.ts'),
      ['export function other(): void {}', 'export interface Loose { readonly x: number }'].join('\n'),
    );
    const record = join(dir, 'surface.txt');
    const written = await surface('--root', dir, '--record', record);
    expect(readFileSync(record, 'utf8')).toContain(
      '## idem (5 names, 4 values)\nconst BARE\nclass Bare\ninterface Shape\nfunction bare\nfunction documented\n\n' +
        '## idem/sqlite (2 names, 1 values)\ninterface Loose\nfunction other\n',
    );
    expect(written.code).toBe(1); // writing the record also names what lacks a doc comment

    const result = await check('--root', dir, '--record', record);

    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'Exported without a doc comment:\n' +
        '  idem: const BARE\n  idem: class Bare\n  idem: interface Shape\n  idem: function bare\n' +
        '  idem/sqlite: function other\n',
    );
  });
});
