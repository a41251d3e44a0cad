import { describe, expect, it } from 'vitest';
import { emptyCounts } from '../../faults/lib/checker.js';
import { faultTotal, runScenario } from '../../faults/lib/scenario.js';
import { freshSeed } from '../../faults/lib/seeded-random.js';
import { ALL_SCENARIOS } from '../../faults/scenarios/all-scenarios.js';
import { ensureBuilt } from '../helpers/mcp-fixtures.js';

// The fault suite's short run (faults/; the long run is `npm run faults`, its report docs/faults.md):
// every scenario against the real processes on loopback, with a fresh seed (or IDEM_FAULTS_SEED),
// printed with the command that replays it. Each must end with zero in every wrong column, counted
// from the provider's and the upstream's own records, and its nemesis must have fired.
//
// proxy-bad-output, proxy-grant and provider-back-before-deadline reproduce issue 38's items 1-3:
// they fail until those are fixed.

const seedOf = () =>
  process.env.IDEM_FAULTS_SEED === undefined ? freshSeed() : Number(process.env.IDEM_FAULTS_SEED) >>> 0;

describe('fault suite (short run): zero in every wrong column, the nemesis fired', () => {
  it.each(ALL_SCENARIOS.map((scenario) => [scenario.name, scenario] as const))(
    '%s',
    async (_name, scenario) => {
      ensureBuilt();
      const result = await runScenario(scenario, seedOf(), 'short', (line) =>
        process.stdout.write(`${line}\n`),
      );
      if (result.skipped !== undefined) {
        process.stderr.write(
          `\n[idem tests] fault scenario ${scenario.name} is SKIPPED on this machine: ${result.skipped}\n`,
        );
        return;
      }
      const replay = `seed ${result.seed}: npm run faults -- --scenario ${scenario.name} --seed ${result.seed} --short`;
      expect(result.error, replay).toBeUndefined();
      expect(faultTotal(result.faults), `the nemesis never fired (${replay})`).toBeGreaterThan(0);
      expect(result.operations).toBeGreaterThan(0);
      expect(result.counts, `${replay}\n${result.findings.join('\n')}`).toEqual(emptyCounts());
    },
    // Generous: processes start slowly on a loaded two-core machine; a scenario's own loops are bounded.
    180_000,
  );
});
