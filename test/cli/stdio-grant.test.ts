import { writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { stdioGrant } from '../../packages/idem-cli/src/cli/stdio-grant.js';
import { TokenRegistry } from '../../packages/idem-cli/src/server/token-registry.js';
import { removeTempFiles, tempFile } from '../helpers/temp-files.js';

// Who `idem serve --stdio` and `idem proxy --stdio` act as: one function for both.

afterEach(removeTempFiles);

const TOOLS = 'tool-token-0123456789';
const OPERATOR = 'operator-token-0123456789';

function registry(entries: Record<string, unknown>): { registry: TokenRegistry; path: string } {
  const path = tempFile('tokens.json');
  writeFileSync(path, JSON.stringify(entries));
  return { registry: TokenRegistry.fromFile(path, { recheckMs: 0 }), path };
}

const both = {
  [TOOLS]: { principal: 'alice', workspaces: ['ws-1'] },
  [OPERATOR]: { principal: 'olivia', role: 'operator' },
};

describe('stdioGrant', () => {
  it('without --tokens: the dev grant', () => {
    const dev = { principal: 'dev', workspaces: ['default'] };
    expect(stdioGrant(undefined, dev, {})()).toBe(dev);
  });

  it("with --tokens: $IDEM_TOKEN's grant, looked up again for every message", () => {
    const { registry: tokens, path } = registry(both);
    const grant = stdioGrant(tokens, undefined, { IDEM_TOKEN: TOOLS });
    expect(grant()).toMatchObject({ principal: 'alice', workspaces: ['ws-1'] });
    writeFileSync(path, JSON.stringify({ [OPERATOR]: both[OPERATOR] }));
    expect(grant()).toBeUndefined();
  });

  it('refuses an unset, unknown or operator $IDEM_TOKEN, before anything is served', () => {
    const { registry: tokens } = registry(both);
    const refusal = 'with --stdio and --tokens, set IDEM_TOKEN to one of the tokens (not an operator token)';
    expect(() => stdioGrant(tokens, undefined, {})).toThrow(refusal);
    expect(() => stdioGrant(tokens, undefined, { IDEM_TOKEN: 'unknown-token-0123456789' })).toThrow(refusal);
    expect(() => stdioGrant(tokens, undefined, { IDEM_TOKEN: OPERATOR })).toThrow(refusal);
  });
});
