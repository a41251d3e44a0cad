import type { Scenario } from '../lib/scenario.js';
import { clientReplies } from './client-replies.js';
import { clockSteps } from './clock-steps.js';
import { diskFull } from './disk-full.js';
import { killProvider } from './kill-provider.js';
import { killProxy } from './kill-proxy.js';
import { killServer } from './kill-server.js';
import { killWorker } from './kill-worker.js';
import { postgresBackendKills } from './postgres-backend-kills.js';
import { providerBackBeforeDeadline } from './provider-back-before-deadline.js';
import { providerReplies } from './provider-replies.js';
import { proxyBadOutput } from './proxy-bad-output.js';
import { proxyGrant } from './proxy-grant.js';

/** Every scenario, in the order a full run takes them. */
export const ALL_SCENARIOS: readonly Scenario[] = [
  killServer,
  killWorker,
  killProvider,
  killProxy,
  clientReplies,
  providerReplies,
  postgresBackendKills,
  diskFull,
  clockSteps,
  proxyBadOutput,
  proxyGrant,
  providerBackBeforeDeadline,
];

export function scenarioNamed(name: string): Scenario {
  const found = ALL_SCENARIOS.find((scenario) => scenario.name === name);
  if (found === undefined)
    throw new Error(`no scenario ${name}; there are: ${ALL_SCENARIOS.map((s) => s.name).join(', ')}`);
  return found;
}
