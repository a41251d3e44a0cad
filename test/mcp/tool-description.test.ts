import { describe, expect, it } from 'vitest';
import { idempotencyInstructions } from '../../packages/idem/src/mcp/tool-description.js';

describe('the retry contract in the tool description', () => {
  it('states the replay window, the tombstone window and that the key is free again after it', () => {
    const text = idempotencyInstructions(24 * 3_600_000, 'get_operation', 30 * 86_400_000);
    expect(text).toContain('A key stays valid for 24 hours after the action completed.');
    expect(text).toContain('After that, for 30 days, a retry with it gets key_expired and is not executed;');
    expect(text).toContain('then the key is free again and a call with it would be a new action');
    expect(text).not.toMatch(/will not run again/);
  });

  it('says that a key of an earlier version of the tool is never executed again', () => {
    expect(idempotencyInstructions(3_600_000, 'get_ticket_status')).toContain(
      "After this tool's version changes, a key used with an earlier version is never executed again: a retry with it returns that version's recorded result, or is refused as version_conflict with the operation_id to look up with get_ticket_status.",
    );
  });

  it("names the server's tombstone retention when the window is not given", () => {
    expect(idempotencyInstructions(90 * 60_000)).toContain(
      "A key stays valid for 90 minutes after the action completed. After that, for the server's tombstone retention, a retry",
    );
  });
});
