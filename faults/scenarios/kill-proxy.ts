import { nemesisPause, settle, unsettle } from '../lib/durable-scenario.js';
import { ProxyRig } from '../lib/proxy-rig.js';
import { checkKeyedCalls, runKeyedCalls } from '../lib/proxy-workload.js';
import type { Scenario } from '../lib/scenario.js';

/**
 * kill -9 of `idem proxy` at random times (its upstream dies with it), started again on the same
 * port and database; every key of record_call is retried through it. The upstream's own file counts.
 */
export const killProxy: Scenario = {
  name: 'kill-proxy',
  description: 'kill -9 of idem proxy at random times, restarted on the same port and database',
  async run(context) {
    const rig = new ProxyRig(context.group, context.dir);
    await rig.start();
    const spreadMs = context.scale === 'short' ? 2500 : 10_000;
    let done = false;
    const healAt = Date.now() + spreadMs + 1500;
    const stopped = () => done || Date.now() >= healAt;
    let healedAt: number | undefined;
    const faults = { kill9_proxy: 0 };
    const nemesis = settle(
      (async () => {
        await nemesisPause(context, stopped, 200, 700);
        while (!stopped()) {
          await rig.proxy?.kill9();
          faults.kill9_proxy += 1;
          await nemesisPause(context, () => false, 50, 600);
          await rig.start();
          await nemesisPause(context, stopped, 400, 1500);
        }
      })(),
    ).finally(() => {
      healedAt = Date.now();
    });
    const records = await runKeyedCalls({
      url: () => rig.url,
      tool: 'record_call',
      count: context.scale === 'short' ? 12 : 50,
      tag: context.tag,
      rng: context.rng,
      spreadMs,
      // After the heal (the last restart done): a killed call's lease (1 s) ends it
      // outcome_unknown; 15 s is ample. Bounded should the nemesis itself hang.
      giveUpAt: () => Math.min((healedAt ?? Infinity) + 15_000, healAt + 60_000),
    }).finally(() => {
      done = true;
    });
    await unsettle(nemesis);
    return { operations: records.length, faults, ...checkKeyedCalls(records, rig.calls()) };
  },
};
