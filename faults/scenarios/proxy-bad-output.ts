import { ProxyRig } from '../lib/proxy-rig.js';
import { checkKeyedCalls, runKeyedCalls } from '../lib/proxy-workload.js';
import type { Scenario } from '../lib/scenario.js';

/**
 * Issue 38, item 1: an upstream tool (bad_output) applies its effect, then answers structuredContent
 * that does not fit its declared output schema. An answer saying nothing was done while the
 * upstream's record shows the call is a false "nothing was done".
 */
export const proxyBadOutput: Scenario = {
  name: 'proxy-bad-output',
  description:
    'upstream applies, then answers structuredContent outside its declared output schema (through idem proxy)',
  issueItem: '1',
  async run(context) {
    const rig = new ProxyRig(context.group, context.dir);
    await rig.start();
    const giveUpAt = Date.now() + 20_000;
    const records = await runKeyedCalls({
      url: () => rig.url,
      tool: 'bad_output',
      count: context.scale === 'short' ? 4 : 12,
      tag: context.tag,
      rng: context.rng,
      spreadMs: 500,
      giveUpAt: () => giveUpAt,
    });
    const calls = rig.calls();
    // The nemesis is the upstream itself: each answer it sent broke its schema.
    const faults = { bad_output_answers: calls.filter((call) => call.tool === 'bad_output').length };
    return { operations: records.length, faults, ...checkKeyedCalls(records, calls) };
  },
};
