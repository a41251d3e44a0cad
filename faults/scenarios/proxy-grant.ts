import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { emptyCounts } from '../lib/checker.js';
import { mcpCall } from '../lib/mcp-call.js';
import { ProxyRig } from '../lib/proxy-rig.js';
import type { Scenario } from '../lib/scenario.js';

const WORKSPACE = 'faults-proxy';

/**
 * Issue 38, item 2: a token whose grant lacks the proxy's workspace calls a read-only pass-through
 * tool (read_calls), an --exclude'd mutating tool (excluded_write) and the keyed tool (record_call).
 * Each must be refused: every call the upstream's record shows from it is counted `unauthorized`.
 * A member's token makes the same calls first, which must reach the upstream (else the setup is broken).
 */
export const proxyGrant: Scenario = {
  name: 'proxy-grant',
  description: "a token without the proxy's workspace calls read-only, --exclude'd and keyed tools",
  issueItem: '2',
  async run(context) {
    const tokens = join(context.dir, 'tokens.json');
    writeFileSync(
      tokens,
      JSON.stringify({
        [`member-token-${context.tag}`]: { principal: 'member', workspaces: [WORKSPACE] },
        [`outsider-token-${context.tag}`]: { principal: 'outsider', workspaces: ['elsewhere'] },
      }),
    );
    const rig = new ProxyRig(context.group, context.dir, ['--tokens', tokens, '--workspace', WORKSPACE]);
    await rig.start();
    const rounds = context.scale === 'short' ? 2 : 6;
    const call = (token: string, tool: string, label: string, index: number) =>
      mcpCall(
        rig.url,
        tool,
        { label, ...(tool === 'record_call' ? { idempotency_key: `${label}-${index}` } : {}) },
        { token },
      );

    for (const tool of ['read_calls', 'excluded_write', 'record_call'])
      await call(`member-token-${context.tag}`, tool, `member-${tool}`, 0);
    const member = rig.calls().filter((c) => c.label.startsWith('member-'));
    if (member.length !== 3)
      throw new Error(
        `the member's calls did not reach the upstream (${JSON.stringify(member)}): the setup is broken`,
      );

    const faults: Record<string, number> = {};
    const finals: Record<string, number> = {};
    for (let index = 0; index < rounds; index++) {
      for (const tool of ['read_calls', 'excluded_write', 'record_call']) {
        const answer = await call(`outsider-token-${context.tag}`, tool, `outsider-${tool}-${index}`, index);
        faults[`outsider_${tool}`] = (faults[`outsider_${tool}`] ?? 0) + 1;
        const kind =
          answer.kind === 'answer'
            ? answer.isError
              ? `refused:${String((answer.sc.error as { code?: string } | undefined)?.code ?? 'error')}`
              : 'served'
            : answer.kind === 'http'
              ? `http_${answer.status}`
              : answer.kind;
        finals[`${tool}:${kind}`] = (finals[`${tool}:${kind}`] ?? 0) + 1;
      }
    }
    const counts = emptyCounts();
    const findings: string[] = [];
    for (const received of rig.calls().filter((c) => c.label.startsWith('outsider-'))) {
      counts.unauthorized += 1;
      findings.push(
        `unauthorized: the upstream received ${received.tool} "${received.label}" from a token without ${WORKSPACE}`,
      );
    }
    return { operations: rounds * 3, faults, counts, finals, findings };
  },
};
