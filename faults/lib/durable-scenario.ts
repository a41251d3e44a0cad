import { checkDeployments } from './checker.js';
import { DeploymentRig, type DeploymentRigOptions } from './deployment-rig.js';
import { runDeployments } from './deployment-workload.js';
import { pause } from './mcp-call.js';
import type { Scenario, ScenarioContext, ScenarioOutcome } from './scenario.js';

/** The nemesis of a durable scenario: injects faults until `stopped()`, leaves everything healed, counts what it did. */
export type DurableNemesis = (
  rig: DeploymentRig,
  context: ScenarioContext,
  stopped: () => boolean,
) => Promise<Record<string, number>>;

export interface DurableScenarioSpec {
  name: string;
  description: string;
  issueItem?: string;
  /** Operations in the short and the long run. */
  operations: { short: number; long: number };
  /** Submissions are spread over this many milliseconds (the nemesis runs meanwhile). */
  spreadMs: { short: number; long: number };
  deadlineMs: number;
  /** How long the nemesis goes on after the last submission (default 1.5 s). */
  nemesisAfterMs?: number;
  /** After the deadline, how long an operation may still take to be final before it is stuck. */
  graceMs?: number;
  /**
   * The faults leave the provider reachable within every deadline: no accepted operation may end
   * without its effect. A function decides from what the nemesis did (how long a restart took).
   */
  promisesCompletion: boolean | ((faults: Record<string, number>) => boolean);
  rig: (context: ScenarioContext) => Omit<DeploymentRigOptions, 'group' | 'dir' | 'deadlineMs'>;
  nemesis: DurableNemesis;
  /** Runs once the rig is up, before the workload and the nemesis start. */
  beforeWorkload?: (rig: DeploymentRig, context: ScenarioContext) => Promise<void>;
  /** Runs before the rig starts; answers a reason to skip on this machine. */
  prepare?: (context: ScenarioContext) => Promise<string | undefined>;
  /** Runs at the end, also after a failure (drops what prepare made). */
  cleanup?: (context: ScenarioContext) => Promise<void>;
}

/** A scenario over start_deployment: rig, workload, nemesis, then the checker on the provider's records. */
export function durableScenario(spec: DurableScenarioSpec): Scenario {
  return {
    name: spec.name,
    description: spec.description,
    ...(spec.issueItem === undefined ? {} : { issueItem: spec.issueItem }),
    async run(context): Promise<ScenarioOutcome> {
      const skip = await spec.prepare?.(context);
      if (skip !== undefined)
        return {
          operations: 0,
          faults: {},
          counts: checkDeployments([], [], { promisesCompletion: false }).counts,
          finals: {},
          findings: [],
          skipped: skip,
        };
      const rig = new DeploymentRig({
        ...spec.rig(context),
        group: context.group,
        dir: context.dir,
        deadlineMs: spec.deadlineMs,
      });
      try {
        await rig.start();
        await spec.beforeWorkload?.(rig, context);
        const spreadMs = spec.spreadMs[context.scale];
        // The nemesis acts while the submissions go in and a little after, then everything is
        // healed: each operation then has the rest of its deadline, and the grace, to be final.
        const healAt = Date.now() + spreadMs + (spec.nemesisAfterMs ?? 1500);
        const settleMs = spec.deadlineMs + (spec.graceMs ?? 8000);
        // Every process back (a restart takes seconds on a loaded machine): the deadline counts from
        // then, bounded at three times the healed schedule should the nemesis itself hang.
        let healedAt: number | undefined;
        const giveUpAt = () => Math.min((healedAt ?? Infinity) + settleMs, healAt + 3 * settleMs);
        let done = false;
        const stopped = () => done || Date.now() >= healAt;
        const nemesis = settle(
          (async () => {
            const faults = await spec.nemesis(rig, context, stopped);
            // The fault proxies, too, stop at the heal, once each has injected a few faults (on a
            // loaded machine the worker's first requests may come late), or when the workload is done.
            const proxies = [
              ...(rig.options.clientFaults ? [rig.clientProxy] : []),
              ...(rig.options.providerFaults ? [rig.providerProxy] : []),
            ];
            const fired = () => proxies.every((proxy) => (proxy?.injected ?? 0) >= 3);
            while (!done && (!stopped() || !fired())) await pause(50);
            rig.clientProxy?.heal();
            rig.providerProxy?.heal();
            return faults;
          })(),
        ).finally(() => {
          healedAt = Date.now();
        });
        const records = await runDeployments({
          url: () => rig.mcpUrl,
          count: spec.operations[context.scale],
          rng: context.rng,
          tag: context.tag,
          spreadMs,
          giveUpAt,
          perOperationMs: settleMs,
        }).finally(() => {
          done = true;
        });
        const faults = await unsettle(nemesis);
        for (const proxy of [rig.clientProxy, rig.providerProxy]) {
          if (proxy === undefined) continue;
          const side = proxy === rig.clientProxy ? 'client' : 'provider';
          for (const [kind, n] of Object.entries(proxy.counts))
            if (kind !== 'pass') faults[`${side}_${kind}`] = (faults[`${side}_${kind}`] ?? 0) + n;
        }
        // Nothing more may happen once everything is final: a late attempt would show here.
        await pause(300);
        const promise = spec.promisesCompletion;
        const tally = checkDeployments(records, await rig.deployments(), {
          promisesCompletion: typeof promise === 'function' ? promise(faults) : promise,
        });
        if (tally.counts.stuck > 0) {
          // Which process was not there to answer, and what it said last.
          for (const child of [rig.server, rig.worker, rig.provider]) {
            if (child === undefined) continue;
            const { exitCode, signalCode } = child.proc;
            const state = child.running ? 'running' : `not running (exit ${String(exitCode ?? signalCode)})`;
            tally.findings.push(
              `stuck: ${child.name} is ${state}; its last lines: ${child.lines().slice(-4).join(' | ').slice(0, 900)}`,
            );
          }
        }
        return { operations: records.length, faults, ...tally };
      } finally {
        await rig.close();
        await spec.cleanup?.(context);
      }
    },
  };
}

/** Waits a random time in [min, max] ms, in slices, returning early once `stopped()`. */
export async function nemesisPause(
  context: ScenarioContext,
  stopped: () => boolean,
  min: number,
  max: number,
): Promise<void> {
  const until = Date.now() + context.rng.int(min, max);
  while (Date.now() < until && !stopped()) await pause(Math.min(50, until - Date.now()));
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Holds a promise's outcome, so that a nemesis that fails early is no unhandled rejection. */
export function settle<T>(promise: Promise<T>): Promise<Settled<T>> {
  return promise.then(
    (value) => ({ ok: true, value }),
    (error: unknown) => ({ ok: false, error }),
  );
}

export async function unsettle<T>(settled: Promise<Settled<T>>): Promise<T> {
  const outcome = await settled;
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}
