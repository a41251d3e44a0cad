import { describe, expect, it } from 'vitest';
import { WORK_OPTIONS, workSettings } from '../../packages/idem-cli/src/cli/work-options.js';
import { DEFAULT_KEY_RETENTION_MS } from '../../packages/idem-cli/src/provider/index.js';

/** The flag values parseArgs gives when only `given` is on the command line. */
function values(given: Record<string, string> = {}) {
  const defaults = Object.fromEntries(
    Object.entries(WORK_OPTIONS)
      .filter(([, spec]) => 'default' in spec)
      .map(([name, spec]) => [name, (spec as { default: string }).default]),
  );
  return { ...defaults, ...given } as Parameters<typeof workSettings>[0];
}

describe('idem serve / idem worker: --provider-key-retention', () => {
  it("defaults to the reference provider's own key retention (24 h)", () => {
    expect(workSettings(values()).providerKeyRetentionMs).toBe(DEFAULT_KEY_RETENTION_MS);
    expect(DEFAULT_KEY_RETENTION_MS).toBe(24 * 3_600_000);
  });

  it('takes a duration with a unit, and refuses anything else as a usage error', () => {
    expect(workSettings(values({ 'provider-key-retention': '1s' })).providerKeyRetentionMs).toBe(1_000);
    for (const bad of ['1', '0s', 'soon']) {
      let caught: unknown;
      try {
        workSettings(values({ 'provider-key-retention': bad }));
      } catch (error) {
        caught = error;
      }
      expect((caught as { exitCode?: number } | undefined)?.exitCode, bad).toBe(2);
      expect((caught as Error).message).toMatch(/^--provider-key-retention: /);
    }
  });
});
