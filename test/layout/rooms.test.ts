import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The idem/rooms messages ESLint, with the repository's own eslint.config.js, gives for `code` at `path`. */
async function roomsMessages(path: string, code: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: REPO_ROOT });
  const [result] = await eslint.lintText(code, { filePath: join(REPO_ROOT, path) });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'idem/rooms').map((m) => m.message);
}

describe('eslint.config.js keeps the library out of the applications (idem/rooms)', () => {
  it.each([
    ['src/core/fixture.ts', "import { DEFAULT_TOMBSTONE_TTL_MS } from '../server/reference-app.js';"],
    ['src/executor/fixture.ts', "import type { ServerApp } from '../server/server-app.js';"],
    ['src/mcp/oauth/fixture.ts', "import { CliError } from '../../cli/cli-error.js';"],
    ['src/client/fixture.ts', "export const main = () => import('../cli/main.js');"],
    ['src/operations/fixture.ts', "export { startProvider } from '../provider/provider-server.js';"],
    ['src/testing/fixture.ts', "export * from '../provider/index.js';"],
    ['src/index.ts', "export { ReferenceApp } from './server/reference-app.js';"],
  ])('refuses %s importing an application', async (path, code) => {
    const messages = await roomsMessages(path, `${code}\n`);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(
      /is library code and must not import the application src\/(server|cli|provider)/,
    );
  });

  it.each([
    ['src/provider/fixture.ts', "import { intOption } from '../cli/options.js';", 'cli'],
    ['src/provider/fixture.ts', "import { ReferenceApp } from '../server/reference-app.js';", 'server'],
    ['src/server/fixture.ts', "import { startProvider } from '../provider/provider-server.js';", 'provider'],
    ['src/server/fixture.ts', "import { CliError } from '../cli/cli-error.js';", 'cli'],
  ])('refuses %s importing another application than allowed (%s)', async (path, code, to) => {
    expect(await roomsMessages(path, `${code}\n`)).toEqual([
      `The application src/${path.split('/')[1]} must not import the application src/${to}.`,
    ]);
  });

  it.each([
    ['src/cli/fixture.ts', "import { ReferenceApp } from '../server/reference-app.js';"],
    ['src/cli/check/fixture.ts', "import { startProvider } from '../../provider/provider-server.js';"],
    ['src/server/fixture.ts', "import { Executor } from '../executor/executor.js';"],
    ['src/core/fixture.ts', "import { systemClock } from './clock.js';"],
    ['src/mcp/fixture.ts', "import { toIdemError } from '../core/errors.js';"],
  ])('lets %s import what it may', async (path, code) => {
    expect(await roomsMessages(path, `${code}\n`)).toEqual([]);
  });
});
