import { randomUUID } from 'node:crypto';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { isIdemError } from '../../packages/idem/src/core/errors.js';
import type { LogFields, Logger } from '../../packages/idem/src/core/logger.js';
import { jsonErrorPosition } from '../../packages/idem-cli/src/server/json-error-position.js';
import { TokenRegistry } from '../../packages/idem-cli/src/server/token-registry.js';
import { removeTempFiles, tempFile } from '../helpers/temp-files.js';

afterEach(removeTempFiles);

const token = (label: string) => `tok-${label}-${randomUUID()}`;

interface Line extends LogFields {
  level: string;
  event: string;
}

function recordingLogger(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  const at =
    (level: string) =>
    (event: string, fields: LogFields = {}) =>
      void lines.push({ level, event, ...fields });
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}

/** The message of what `fromFile` throws for `text`, checked to be a coded invalid_argument. */
function startupError(text: string | Buffer): string {
  const path = tempFile('tokens.json');
  writeFileSync(path, text);
  try {
    TokenRegistry.fromFile(path);
  } catch (error) {
    expect(isIdemError(error) && error.code).toBe('invalid_argument');
    return (error as Error).message;
  }
  throw new Error('fromFile accepted an invalid file');
}

describe('TokenRegistry: grants per token', () => {
  it('gives each token its own workspaces, even two tokens of one principal', () => {
    const wide = token('wide');
    const narrow = token('narrow');
    const path = tempFile('tokens.json');
    writeFileSync(
      path,
      JSON.stringify({
        [wide]: { principal: 'alice', workspaces: ['shared', 'alice-ws'] },
        [narrow]: { principal: 'alice', workspaces: ['shared'] },
      }),
    );
    const registry = TokenRegistry.fromFile(path);
    expect(registry.grantFor(wide)).toEqual({ principal: 'alice', workspaces: ['shared', 'alice-ws'] });
    expect(registry.grantFor(narrow)).toEqual({ principal: 'alice', workspaces: ['shared'] });
    expect(registry.grantFor(token('unknown'))).toBeUndefined();
  });
});

describe('TokenRegistry: an invalid file at start-up', () => {
  const secret = token('secret');
  const good = token('good');
  const entry = (grant: unknown) =>
    JSON.stringify({ [good]: { principal: 'a', workspaces: [] }, [secret]: grant });

  it.each([
    ['a missing field', entry({ principal: 'a' }), 'entry 2: workspaces: required'],
    ['a misspelt field', entry({ principal: 'a', workspace: ['x'] }), 'entry 2: unknown field "workspace"'],
    ['a wrong type', entry({ principal: 'a', workspaces: 'x' }), 'entry 2: workspaces: must be an array'],
    [
      'an empty workspace',
      entry({ principal: 'a', workspaces: ['x', ''] }),
      'entry 2: workspaces[1]: must be',
    ],
    ['an empty principal', entry({ principal: '', workspaces: [] }), 'entry 2: principal: must be a string'],
    ['a grant that is no object', entry(['a']), 'entry 2: must be an object'],
    ['an array', JSON.stringify([secret]), 'the top level must be an object'],
    [
      'a token listed twice',
      `{"${secret}": {"principal": "bob", "workspaces": []},\n "${good}": {"principal": "a", "workspaces": []},\n "${secret}": {"principal": "alice", "workspaces": []}}`,
      'entry 3 lists the token of entry 1 again (line 3, column 2)',
    ],
    [
      'a field given twice',
      `{"${good}": {"principal": "a", "workspaces": []}, "${secret}": {"principal": "b", "workspaces": [], "principal": "alice"}}`,
      'entry 2: the field "principal" is given twice',
    ],
    // JSON.stringify writes a lone surrogate as the escape \udXXX, which JSON.parse reads back as one.
    [
      'a principal with a lone surrogate',
      entry({ principal: 'mallory\ud800', workspaces: [] }),
      'entry 2: principal: must be well-formed Unicode (it contains a lone surrogate',
    ],
    [
      'a principal with U+0000',
      entry({ principal: 'mallory\u0000', workspaces: [] }),
      'entry 2: principal: must not contain the character U+0000 (NUL)',
    ],
    [
      'a workspace with a lone surrogate',
      entry({ principal: 'a', workspaces: ['ok', 'ws\udfff'] }),
      'entry 2: workspaces[1]: must be well-formed Unicode',
    ],
    [
      'a workspace with U+0000',
      entry({ principal: 'a', workspaces: ['ws\u0000'] }),
      'entry 2: workspaces[0]: must not contain the character U+0000',
    ],
    [
      'bytes that are not UTF-8',
      // A principal `mallory` + byte 0xFF, which a lenient decoder reads as U+FFFD.
      Buffer.concat([
        Buffer.from(`{"${secret}": {"principal": "mallory`),
        Buffer.from([0xff]),
        Buffer.from('", "workspaces": []}}'),
      ]),
      'not UTF-8',
    ],
  ])('names the entry by position for %s, never the token', (_label, text, expected) => {
    const message = startupError(text);
    expect(message).toContain(expected);
    expect(message).toMatch(/^tokens file \S+tokens\.json is invalid: /);
    expect(message).not.toContain(secret);
    expect(message).not.toContain(good);
  });

  it('refuses a token shorter than 16 characters by its position', () => {
    const message = startupError(
      JSON.stringify({
        [good]: { principal: 'a', workspaces: [] },
        'short-tok-15chr': { principal: 'b', workspaces: [] },
      }),
    );
    expect(message).toContain('entry 2: the token is shorter than 16 characters');
    expect(message).not.toContain('short-tok-15chr');
  });

  it('refuses a token with whitespace, which no Authorization header could carry', () => {
    const message = startupError(JSON.stringify({ [`${good} x`]: { principal: 'a', workspaces: [] } }));
    expect(message).toContain('entry 1: the token contains whitespace');
    expect(message).not.toContain(good);
  });

  it.each([
    ['a trailing comma', `{\n  "${secret}": { "principal": "a", "workspaces": [] },\n}`, 'line 3, column 1'],
    ['an unquoted value', `{"${secret}": x}`, `line 1, column ${secret.length + 6}`],
    ['a cut-off file', `{"${secret}": {"principal": "a"`, `line 1, column ${secret.length + 23}`],
    ['an empty file', '', 'line 1, column 1'],
  ])('gives the line and column of %s, never the text around it', (_label, text, where) => {
    const message = startupError(text);
    expect(message).toContain(`is invalid: not JSON (${where})`);
    expect(message).not.toContain(secret.slice(4, 12));
  });

  it('says a missing file does not exist', () => {
    expect(() => TokenRegistry.fromFile(tempFile('absent.json'))).toThrow(
      /cannot read tokens file .*absent\.json: it does not exist/,
    );
  });
});

describe('TokenRegistry: reloading', () => {
  const alice = token('alice');
  const bob = token('bob');
  const valid = {
    [alice]: { principal: 'alice', workspaces: ['a'] },
    [bob]: { principal: 'bob', workspaces: ['b'] },
  };

  function setup() {
    const path = tempFile('tokens.json');
    writeFileSync(path, JSON.stringify(valid));
    const logger = recordingLogger();
    const registry = TokenRegistry.fromFile(path, { recheckMs: 0, logger });
    return { path, logger, registry };
  }

  function expectNoTokenLogged(lines: Line[]) {
    const text = JSON.stringify(lines);
    for (const t of [alice, bob]) expect(text).not.toContain(t);
  }

  it('applies a valid change and logs tokens.reloaded', () => {
    const { path, logger, registry } = setup();
    writeFileSync(path, JSON.stringify({ [alice]: { principal: 'alice', workspaces: ['a', 'c'] } }));
    expect(registry.grantFor(alice)?.workspaces).toEqual(['a', 'c']);
    expect(registry.grantFor(bob)).toBeUndefined();
    expect(logger.lines).toEqual([{ level: 'info', event: 'tokens.reloaded', file: path, tokens: 1 }]);
  });

  it.each([
    ['a trailing comma', `${JSON.stringify(valid).slice(0, -1)},}`, /not JSON \(line 1, column \d+\)/],
    [
      'a misspelt field',
      JSON.stringify({ ...valid, [bob]: { principal: 'bob', workspace: ['b'] } }),
      /entry 2: unknown field "workspace"/,
    ],
    [
      'a short token',
      JSON.stringify({ ...valid, 'only-15-chars!!': { principal: 'c', workspaces: [] } }),
      /entry 3: the token is shorter/,
    ],
    [
      "bob's token listed again for alice",
      `${JSON.stringify(valid).slice(0, -1)},"${bob}":{"principal":"alice","workspaces":["a"]}}`,
      /entry 3 lists the token of entry 2 again \(line 1, column \d+\)/,
    ],
    [
      'a principal with a lone surrogate',
      JSON.stringify({ ...valid, [bob]: { principal: 'bob\udfff', workspaces: ['b'] } }),
      /entry 2: principal: must be well-formed Unicode/,
    ],
  ])(
    'fails closed on %s: logs an error at once and refuses every token until a valid file',
    (_l, text, reason) => {
      const { path, logger, registry } = setup();
      expect(registry.grantFor(alice)).toBeDefined();
      writeFileSync(path, text);

      expect(registry.grantFor(alice)).toBeUndefined();
      expect(registry.grantFor(bob)).toBeUndefined();
      expect(logger.lines).toHaveLength(1);
      expect(logger.lines[0]).toMatchObject({ level: 'error', event: 'tokens.reload_failed', file: path });
      expect(String(logger.lines[0]?.reason)).toMatch(reason);
      // The broken file is reported once, not at every lookup.
      expect(registry.grantFor(alice)).toBeUndefined();
      expect(logger.lines).toHaveLength(1);

      writeFileSync(path, JSON.stringify(valid));
      expect(registry.grantFor(alice)).toEqual({ principal: 'alice', workspaces: ['a'] });
      expect(logger.lines[1]).toEqual({ level: 'info', event: 'tokens.reloaded', file: path, tokens: 2 });
      expectNoTokenLogged(logger.lines);
    },
  );

  it('revokes every token when the file is deleted, and logs it', () => {
    const { path, logger, registry } = setup();
    rmSync(path);
    expect(registry.grantFor(alice)).toBeUndefined();
    expect(logger.lines).toEqual([
      expect.objectContaining({
        level: 'error',
        event: 'tokens.reload_failed',
        file: path,
        reason: `cannot read tokens file ${path}: it does not exist`,
      }),
    ]);
    expect(registry.grantFor(bob)).toBeUndefined();
    expect(logger.lines).toHaveLength(1);

    // Put back atomically, as the docs recommend.
    writeFileSync(`${path}.tmp`, JSON.stringify(valid));
    renameSync(`${path}.tmp`, path);
    expect(registry.grantFor(bob)).toEqual({ principal: 'bob', workspaces: ['b'] });
    expect(logger.lines.map((l) => l.event)).toEqual(['tokens.reload_failed', 'tokens.reloaded']);
  });

  it('reports a broken file without waiting for a lookup while watching', async () => {
    const path = tempFile('tokens.json');
    writeFileSync(path, JSON.stringify(valid));
    const logger = recordingLogger();
    const registry = TokenRegistry.fromFile(path, { recheckMs: 20, logger });
    const stop = registry.watch();
    try {
      writeFileSync(path, '{');
      const deadline = Date.now() + 5_000;
      while (logger.lines.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(logger.lines).toEqual([
        expect.objectContaining({
          event: 'tokens.reload_failed',
          reason: expect.stringMatching(/line 1, column 2/),
        }),
      ]);
    } finally {
      stop();
    }
    writeFileSync(path, JSON.stringify(valid));
    await new Promise((r) => setTimeout(r, 100));
    expect(logger.lines).toHaveLength(1); // stopped: nothing checks until a lookup
    expect(registry.grantFor(alice)).toBeDefined();
  });

  it('checks the file at most once per recheckMs', () => {
    const path = tempFile('tokens.json');
    writeFileSync(path, JSON.stringify(valid));
    const registry = TokenRegistry.fromFile(path, { recheckMs: 60_000 });
    rmSync(path);
    expect(registry.grantFor(alice)).toBeDefined();
    registry.reload();
    expect(registry.grantFor(alice)).toBeUndefined();
  });

  it('has no tokens when fixed, only its grant', () => {
    const registry = TokenRegistry.fixed({ principal: 'dev', workspaces: ['default'] });
    expect(registry.fromFile).toBe(false);
    expect(registry.fixedGrant).toEqual({ principal: 'dev', workspaces: ['default'] });
    expect(registry.grantFor('dev')).toBeUndefined();
  });
});

describe('jsonErrorPosition', () => {
  // Characters that matter to JSON's grammar, so that most insertions break it somewhere.
  const junk = fc.string({
    unit: fc.constantFrom(...'"\\/,:{}[] \n\u0001\u007fetu0-.eE+x'.split('')),
    maxLength: 3,
  });

  it('finds nothing wrong in what JSON.parse accepts, and a place in what it refuses', () => {
    fc.assert(
      fc.property(fc.json(), fc.nat(), junk, (text, at, junk) => {
        expect(jsonErrorPosition(text)).toBeUndefined();
        const cut = at % (text.length + 1);
        const mutated = text.slice(0, cut) + junk + text.slice(cut);
        let valid = true;
        try {
          JSON.parse(mutated);
        } catch {
          valid = false;
        }
        expect(jsonErrorPosition(mutated) === undefined).toBe(valid);
      }),
      { numRuns: 500 },
    );
  });

  it('counts lines and columns from 1', () => {
    expect(jsonErrorPosition('{\n  "a": 1,\n}')).toEqual({ line: 3, column: 1 });
    expect(jsonErrorPosition('[1, 2')).toEqual({ line: 1, column: 6 });
    expect(jsonErrorPosition('"\\x"')).toEqual({ line: 1, column: 3 });
    expect(jsonErrorPosition('{"a": 01}')).toEqual({ line: 1, column: 8 });
  });
});
