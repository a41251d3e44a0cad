#!/usr/bin/env node
// Lints the workspace packages as `npm publish` would ship them: publint (package.json fields,
// exports, files) on both tarballs, and Are the Types Wrong? (type resolution of every subpath, ESM
// only) on the library's; the applications' package has a bin and no entry to import. The packs
// (scripts/pack-workspace.mjs) use the build in dist/: `npm test` built it just before, and a
// second build would rewrite files a running process may be reading.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import process from 'node:process';
import { packWorkspace } from './pack-workspace.mjs';

const root = resolve(import.meta.dirname, '..');
const dir = mkdtempSync(join(tmpdir(), 'idem-lint-package-'));
try {
  const library = packWorkspace('idem', dir);
  const applications = packWorkspace('idem-cli', dir);
  for (const tarball of [library, applications]) {
    execFileSync('npx', ['publint', 'run', tarball, '--strict'], { cwd: root, stdio: 'inherit' });
  }
  execFileSync('npx', ['attw', library, '--profile', 'esm-only', '--no-emoji'], {
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
