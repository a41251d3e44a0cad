import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ReferenceApp } from '../../packages/idem-cli/src/server/reference-app.js';
import { TokenRegistry } from '../../packages/idem-cli/src/server/token-registry.js';
import { cleanup, closeQuietly, connectInMemory, makeTempDir } from '../helpers/mcp-fixtures.js';

afterEach(cleanup);

describe('the reference server states its retention where the caller reads it', () => {
  it('tools/list: each mutating tool names the replay window, the tombstone window, and that the key is free after it', async () => {
    const app = new ReferenceApp({
      dbPath: join(makeTempDir('idem-desc-'), 'db.sqlite'),
      registry: TokenRegistry.fixed({ principal: 'p', workspaces: ['default'] }),
      retentionMs: 2 * 3_600_000,
      tombstoneTtlMs: 7 * 86_400_000,
    });
    const client = await connectInMemory(app, 'p');
    try {
      const { tools } = await client.listTools();
      for (const name of ['create_note', 'start_deployment']) {
        const description = tools.find((tool) => tool.name === name)?.description ?? '';
        expect(description, name).toContain('A key stays valid for 2 hours after the action completed.');
        expect(description, name).toContain('After that, for 7 days, a retry with it gets key_expired');
        expect(description, name).toContain('then the key is free again');
      }
    } finally {
      await closeQuietly(client);
      await app.close();
    }
  });
});
