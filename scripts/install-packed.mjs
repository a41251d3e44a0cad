// Until idem and idem-cli are on the npm registry: installs both, packed from this clone, into a
// project of yours, in one command (the CLI's tarball needs the library's beside it):
//
//   npm run install-packed -- /path/to/your-project
//
// It builds nothing: `npm ci` in the clone built dist/ already. The tarballs are written to
// <project>/.idem-packages/ (keep them: package.json refers to them as file: dependencies) and
// installed with `npm install`, which adds both to the project's dependencies.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import process from 'node:process';
import { packWorkspace } from './pack-workspace.mjs';

const target = process.argv[2];
if (target === undefined || !existsSync(join(resolve(target), 'package.json'))) {
  process.stderr.write(
    'usage: npm run install-packed -- /path/to/your-project   (a folder with a package.json; `npm init -y` makes one)\n',
  );
  process.exit(2);
}
const project = resolve(target);
const dir = join(project, '.idem-packages');
mkdirSync(dir, { recursive: true });
const library = packWorkspace('idem', dir);
const applications = packWorkspace('idem-cli', dir);
const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
execFileSync('npm', ['install', library, applications, '--no-audit', '--no-fund'], {
  cwd: project,
  env,
  stdio: 'inherit',
});
process.stdout.write(
  `installed idem and idem-cli into ${project} (tarballs in ${dir}); try: npx idem serve\n`,
);
