#!/usr/bin/env node
// Lints the package as `npm publish` would ship it: publint (package.json fields, exports, files)
// and Are the Types Wrong? (type resolution of every subpath, ESM only) on one `npm pack` tarball.
// The pack skips `prepare`: `npm test` built dist/ just before, and a second build would rewrite
// files a running process may be reading.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import process from 'node:process';

const root = resolve(import.meta.dirname, '..');
const dir = mkdtempSync(join(tmpdir(), 'idem-lint-package-'));
try {
  const packed = execFileSync(
    'npm',
    ['pack', '--ignore-scripts', '--json', '--loglevel=warn', '--pack-destination', dir],
    { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const tarball = join(dir, JSON.parse(packed)[0].filename);
  execFileSync('npx', ['publint', 'run', tarball, '--strict'], { cwd: root, stdio: 'inherit' });
  execFileSync('npx', ['attw', tarball, '--profile', 'esm-only', '--no-emoji'], {
    cwd: root,
    stdio: 'inherit',
  });
} catch (error) {
  // The tools have printed what they found; a stack trace would add nothing.
  process.stderr.write(`lint-package: ${error.message.split('\n')[0]}\n`);
  process.exitCode = 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
