import { describe, expect, it } from 'vitest';
import { INTENT_DIGEST_LENGTH, intentDigest } from '../../packages/idem/src/core/intent-digest.js';

const identity = { principal: 'alice', workspace: 'ws-1', operation: 'create_note', key: 'k-1' };

describe('intentDigest', () => {
  it('is the first 128 bits of SHA-256 over the canonical JSON array, base64url', () => {
    // sha256('["alice","ws-1","create_note","k-1"]'), base64url, first 22 characters
    expect(intentDigest(identity)).toBe('xHHVuC0sIRDWv6KxMei_ou');
    expect(intentDigest(identity)).toHaveLength(INTENT_DIGEST_LENGTH);
  });

  it('is the same for the same action, whatever else the call carries (the version too)', () => {
    expect(intentDigest({ ...identity })).toBe(intentDigest(identity));
    expect(intentDigest({ ...identity, version: 2 } as typeof identity)).toBe(intentDigest(identity));
  });

  it('differs when any part differs, including parts that differ only in where a separator falls', () => {
    const digests = [
      identity,
      { ...identity, principal: 'bob' },
      { ...identity, workspace: 'ws-2' },
      { ...identity, operation: 'start_deployment' },
      { ...identity, key: 'k-2' },
      { ...identity, principal: 'alice","ws-1', workspace: '' },
      { ...identity, principal: 'mallory\ud800' },
      { ...identity, principal: 'mallory\udfff' },
    ].map(intentDigest);
    expect(new Set(digests).size).toBe(digests.length);
  });

  it('never contains a part of the identity', () => {
    const secret = { principal: 'p', workspace: 'w', operation: 'o', key: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' };
    expect(intentDigest(secret)).not.toContain('AAAAAA');
    expect(intentDigest(secret)).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });
});
