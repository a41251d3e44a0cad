import { describe, expect, it } from 'vitest';
import { identityFromAuthInfo } from '../../packages/idem/src/mcp/idem-identity.js';
import { principalFromAuthInfo, toolCallContext } from '../../packages/idem/src/mcp/principal.js';

// A verifier of one's own fills `extra.principal`; one PostgreSQL cannot store as written (U+0000, a
// lone surrogate, which it would turn into U+FFFD and so merge with another principal) is no principal.

describe('principalFromAuthInfo', () => {
  it('reads no principal from one with U+0000 or a lone surrogate, so every tool answers forbidden', () => {
    for (const principal of ['mallory\ud800', 'mallory\udfff', '\udc00mallory', 'mallory\u0000', '', 7]) {
      const authInfo = { extra: { principal, workspaces: ['ws'] } };
      expect(principalFromAuthInfo(authInfo), JSON.stringify(principal)).toBeUndefined();
      expect(toolCallContext(authInfo, undefined).principal).toBeUndefined();
      expect(identityFromAuthInfo(authInfo)).toBeUndefined();
    }
  });

  it('reads well-formed principals as they are, surrogate pairs and U+FFFD included', () => {
    for (const principal of ['alice', 'mallory\ud83d\ude00', 'mallory\ufffd', 'ä\u0001']) {
      expect(principalFromAuthInfo({ extra: { principal } })).toBe(principal);
    }
  });
});

describe('toolCallContext (idem/mcp, for frameworks that hand a tool `(args, extra)`)', () => {
  it('is exported by idem/mcp and idem/mcp-v1 and builds the context registerIdemTool builds', async () => {
    const [v2, v1] = await Promise.all([
      import('../../packages/idem/src/mcp/index.js'),
      import('../../packages/idem/src/mcp/v1/index.js'),
    ]);
    expect(v2.toolCallContext).toBe(toolCallContext);
    expect(v1.toolCallContext).toBe(toolCallContext);
    const signal = new AbortController().signal;
    const extra = { principal: 'alice', workspaces: ['team-a'] };
    expect(toolCallContext({ extra }, signal)).toEqual({ principal: 'alice', credentials: extra, signal });
    expect(toolCallContext({ extra }, signal).credentials).toBe(extra);
  });

  it('leaves out credentials and signal it was not given, and has no principal without one', () => {
    expect(toolCallContext(undefined, undefined)).toEqual({ principal: undefined });
    expect(Object.keys(toolCallContext({}, undefined))).toEqual(['principal']);
    expect(toolCallContext({ extra: { workspaces: ['team-a'] } }, undefined)).toEqual({
      principal: undefined,
      credentials: { workspaces: ['team-a'] },
    });
  });
});
