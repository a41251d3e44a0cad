import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LIB = 'packages/idem/src';
const APPS = 'packages/idem-cli/src';

/** The idem/rooms messages ESLint, with the repository's own eslint.config.js, gives for `code` at `path`. */
async function roomsMessages(path: string, code: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: REPO_ROOT });
  const [result] = await eslint.lintText(`${code}\n`, { filePath: join(REPO_ROOT, path) });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'idem/rooms').map((m) => m.message);
}

describe('eslint.config.js keeps each package to its own files (idem/rooms)', () => {
  it.each([
    [`${LIB}/core/fixture.ts`, "import { x } from '../../../idem-cli/src/server/reference-app.js';"],
    [`${LIB}/mcp/oauth/fixture.ts`, "import { CliError } from '../../../../idem-cli/src/cli/cli-error.js';"],
    [`${LIB}/client/fixture.ts`, "export const main = () => import('../../../idem-cli/src/cli/main.js');"],
    [`${LIB}/testing/fixture.ts`, "export * from '../../../idem-cli/src/provider/index.js';"],
    [`${LIB}/index.ts`, "export { x } from '../../../test/helpers/mcp-fixtures.js';"],
  ])('refuses %s importing by path outside the library', async (path, code) => {
    const messages = await roomsMessages(path, code);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(/^packages\/idem\/src must not import \S+ by path/);
  });

  it.each([
    [`${LIB}/core/fixture.ts`, "import { x } from 'idem-cli';"],
    [`${LIB}/executor/fixture.ts`, "import type { X } from 'idem-cli/dist/server/server-app.js';"],
  ])('refuses %s importing the applications by name', async (path, code) => {
    expect(await roomsMessages(path, code)).toEqual([
      expect.stringMatching(/^The library \(packages\/idem\) must not import the applications/),
    ]);
  });

  it.each([
    [`${APPS}/server/fixture.ts`, "import { Executor } from '../../../idem/src/executor/executor.js';"],
    [
      `${APPS}/cli/check/fixture.ts`,
      "import { replyError } from '../../../../idem/src/client/tool-reply.js';",
    ],
    [`${APPS}/provider/fixture.ts`, "import { x } from '../../../idem/dist/index.js';"],
  ])('refuses %s importing the library by path', async (path, code) => {
    const messages = await roomsMessages(path, code);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(/^packages\/idem-cli\/src must not import packages\/idem\/\S+ by path/);
  });

  it.each([
    [`${APPS}/provider/fixture.ts`, "import { intOption } from '../cli/options.js';", 'cli'],
    [`${APPS}/provider/fixture.ts`, "import { ReferenceApp } from '../server/reference-app.js';", 'server'],
    [
      `${APPS}/server/fixture.ts`,
      "import { startProvider } from '../provider/provider-server.js';",
      'provider',
    ],
    [`${APPS}/server/fixture.ts`, "import { CliError } from '../cli/cli-error.js';", 'cli'],
    [`${APPS}/proxy/fixture.ts`, "import { CliError } from '../cli/cli-error.js';", 'cli'],
    [`${APPS}/newroom/fixture.ts`, "import { readBody } from '../server/read-body.js';", 'server'],
  ])('refuses %s importing another application than allowed (%s)', async (path, code, to) => {
    expect(await roomsMessages(path, code)).toEqual([
      `The application src/${path.split('/')[3]} must not import the application src/${to}.`,
    ]);
  });

  it.each([
    [`${APPS}/cli/fixture.ts`, "import { ReferenceApp } from '../server/reference-app.js';"],
    [`${APPS}/proxy/fixture.ts`, "import { readBody } from '../server/read-body.js';"],
    [`${APPS}/cli/check/fixture.ts`, "import { startProvider } from '../../provider/provider-server.js';"],
    [`${APPS}/server/fixture.ts`, "import { Executor } from 'idem';"],
    [`${APPS}/server/fixture.ts`, "import { registerIdempotentTool } from 'idem/mcp';"],
    [`${LIB}/core/fixture.ts`, "import { systemClock } from './clock.js';"],
    [`${LIB}/mcp/fixture.ts`, "import { toIdemError } from '../core/errors.js';"],
  ])('lets %s import what it may', async (path, code) => {
    expect(await roomsMessages(path, code)).toEqual([]);
  });
});

describe('every application folder is named in the import rule', () => {
  it('APPLICATION_IMPORTS names each folder of packages/idem-cli/src', async () => {
    const { readdirSync } = await import('node:fs');
    const { APPLICATION_IMPORTS } = await import('../../scripts/eslint-rooms.mjs');
    const folders = readdirSync(join(REPO_ROOT, APPS), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
    expect(Object.keys(APPLICATION_IMPORTS).sort()).toEqual(folders);
  });
});
