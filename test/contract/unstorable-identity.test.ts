import { randomUUID } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import { callStart, storeFactories, type TestStore } from '../helpers/store-fixtures.js';

// Every part of an identity is stored losslessly or refused, the same on every engine. PostgreSQL
// stores a lone surrogate (U+D800 to U+DFFF without its pair) as U+FFFD, so `mallory\uD800` and
// `mallory\uDFFF` were one principal there: the second replayed the first one's receipt. Strings that
// are not well-formed Unicode are refused before any storage access; well-formed ones, surrogate
// pairs included, are kept apart and read back unchanged.

const LONE = 'must be well-formed Unicode (it contains a lone surrogate, U+D800 to U+DFFF without its pair)';
const NUL = 'must not contain the character U+0000 (NUL)';

for (const factory of storeFactories) {
  describe(`identity strings: ${factory.name} executor`, () => {
    async function open(): Promise<TestStore> {
      const t = await factory.create();
      onTestFinished(() => t.close());
      return t;
    }

    it('refuses principals with a lone surrogate or U+0000 as forbidden: no replay across them, nothing written', async () => {
      const t = await open();
      const key = randomUUID();
      const run = (principal: string) =>
        t.executor.run(t.createNote, { principal, workspace: 'ws-1', key, args: { body: 'hello' } });
      for (const [principal, problem] of [
        ['mallory\ud800', LONE],
        ['mallory\udfff', LONE],
        ['mallory\u0000', NUL],
      ] as const) {
        const outcome = await run(principal);
        if (outcome.ok) throw new Error(`accepted principal ${JSON.stringify(principal)}`);
        expect(outcome.error).toMatchObject({
          code: 'forbidden',
          retryable: false,
          message: `the authenticated principal cannot be used: it ${problem}`,
        });
        const started = await callStart(t, { key: randomUUID(), principal });
        expect(started.ok ? 'accepted' : started.error.code).toBe('forbidden');
      }
      expect(await t.countNotes()).toBe(0);
      expect(await t.countReceipts()).toBe(0);
    });

    it('refuses a workspace or an argument with a lone surrogate as invalid_argument, naming where', async () => {
      const t = await open();
      const run = (workspace: string, args: { body: string }) =>
        t.executor.run(t.createNote, { principal: 'alice', workspace, key: randomUUID(), args });
      const refusals = [
        [await run('ws\ud800', { body: 'fine' }), 'workspace'],
        [await run('ws-1', { body: 'a\udfffb' }), 'body'],
        [
          await callStart(t, { key: randomUUID(), args: { service: 'api', version: '1', tags: ['\ud83d'] } }),
          'tags.0',
        ],
        [
          await callStart(t, { key: randomUUID(), args: { service: 'api', version: '1', ['\udc00']: 1 } }),
          '(a key)',
        ],
      ] as const;
      for (const [outcome, path] of refusals) {
        if (outcome.ok) throw new Error(`accepted a lone surrogate in ${path}`);
        expect(outcome.error).toMatchObject({
          code: 'invalid_argument',
          retryable: false,
          message: `invalid arguments: ${path}: ${LONE}`,
        });
      }
      expect(await t.countNotes()).toBe(0);
      expect(await t.countReceipts()).toBe(0);
    });

    it('keeps principals and workspaces that differ only in a surrogate pair apart, and reads them back unchanged', async () => {
      const t = await open();
      const key = randomUUID();
      const run = (principal: string, workspace: string) =>
        t.executor.run(t.createNote, { principal, workspace, key, args: { body: 'b\ud83d\ude00' } });
      const scopes = [
        ['mallory\ud83d\ude00', 'ws-1'],
        ['mallory\ud83d\ude01', 'ws-1'],
        ['mallory\ufffd', 'ws-1'],
        ['alice', 'ws\ud83d\ude00'],
        ['alice', 'ws\ud83d\ude01'],
      ] as const;
      const ids = new Set<string>();
      for (const [principal, workspace] of scopes) {
        const outcome = await run(principal, workspace);
        if (!outcome.ok) throw new Error(`refused ${JSON.stringify(principal)}: ${outcome.error.message}`);
        expect(outcome.replayed).toBe(false);
        ids.add(outcome.operationId);
        const record = await t.store.ledger.get(outcome.operationId);
        expect(record?.identity).toMatchObject({ principal, workspace, key });
        // The same scope again replays its own receipt.
        const again = await run(principal, workspace);
        expect(again.ok && again.replayed && again.operationId).toBe(outcome.operationId);
      }
      expect(ids.size).toBe(scopes.length);
      expect(await t.countNotes()).toBe(scopes.length);
    });
  });
}
