import { describe, expect, it } from 'vitest';
import type { SentCall } from '../../packages/idem-cli/src/cli/check/sent-log.js';
import { SCRIPTED, check, rowsOf, toolOf, verdictsOf } from './run-check.js';

// create_payment's keys are scoped by workspace, as Idem's are: the same key in another workspace is
// another action, rightly carried out. Its currency must match ^[A-Z]{3}$.
const payments = ['--', process.execPath, SCRIPTED, 'payments'];
const ALL_PASS = [
  ['lost_response', 'pass'],
  ['concurrent_duplicates', 'pass'],
  ['conflicting_arguments', 'pass'],
  ['fresh_key', 'pass'],
  ['cross_principal', 'skip'],
];

/** The two calls of the conflict row: one key, one workspace, one other argument. */
function expectOneArgumentChanged(sent: readonly SentCall[] | undefined, changed: string): void {
  expect(sent).toHaveLength(2);
  const [first, second] = sent as [SentCall, SentCall];
  expect(first).toMatchObject({ calls: 1, principal: 'primary' });
  expect(second).toMatchObject({ calls: 1, principal: 'primary' });
  expect(first.arguments.idempotency_key).toBe('<key 1>');
  expect(second.arguments.idempotency_key).toBe('<key 1>');
  expect(second.arguments.workspace).toBe(first.arguments.workspace);
  const differs = Object.keys(first.arguments).filter(
    (name) => JSON.stringify(first.arguments[name]) !== JSON.stringify(second.arguments[name]),
  );
  expect(differs).toEqual([changed]);
}

describe('idem check never varies the scope to make "other arguments"', () => {
  it('with the currency fixed (and the workspace), passes a server that scopes keys by workspace', async () => {
    // Before: a usage error (exit 2) that suggested --arg 'workspace=idem {{unique}}'.
    const result = await check(['--arg', 'workspace=w', '--arg', 'currency=EUR', '--json', ...payments]);
    expect(result.error).toBeUndefined();
    expect(result.exitCode).toBe(0);
    expect(toolOf(result, 'create_payment')).toMatchObject({
      scope: { names: ['workspace'], from: 'found' },
      count: { tool: 'list_payments', path: '$.payments', perAction: 1 },
    });
    expect(verdictsOf(result, 'create_payment')).toEqual(ALL_PASS);
    const conflict = rowsOf(result, 'create_payment').conflicting_arguments;
    expect(conflict?.evidence).toMatchObject({
      changed: 'amount_cents',
      second: { kind: 'error', code: 'payload_conflict' },
      effects: 0,
    });
    expect(conflict?.summary).toMatch(/^refused \(payload_conflict\): amount_cents changed: first pay_/);
    expectOneArgumentChanged(conflict?.sent, 'amount_cents');
    expect(conflict?.sent[0]?.arguments).toEqual({
      workspace: 'w',
      amount_cents: 1,
      currency: 'EUR',
      idempotency_key: '<key 1>',
    });
    // No key the checker made is printed, in any row.
    expect(result.output).not.toMatch(/idem-check-[0-9a-f]{8}-/);
  }, 60_000);

  it('following the old hint (a varying workspace), still changes only another argument', async () => {
    const result = await check([
      '--arg',
      'workspace=idem {{unique}}',
      '--arg',
      'currency=EUR',
      '--json',
      ...payments,
    ]);
    expect(result.exitCode).toBe(0);
    const rows = rowsOf(result, 'create_payment');
    expect(rows.conflicting_arguments).toMatchObject({
      result: 'pass',
      evidence: { changed: 'amount_cents', second: { code: 'payload_conflict' } },
    });
    expectOneArgumentChanged(rows.conflicting_arguments?.sent, 'amount_cents');
    expect(rows.conflicting_arguments?.sent[0]?.arguments.workspace).toMatch(/^idem [0-9a-f]{12}$/);
  }, 60_000);

  it('zero-config but for the currency: the sampled workspace is one place for every action', async () => {
    const result = await check(['--arg', 'currency=EUR', '--json', ...payments]);
    expect(result.exitCode).toBe(0);
    const rows = rowsOf(result, 'create_payment');
    expect(rows.conflicting_arguments?.result).toBe('pass');
    expectOneArgumentChanged(rows.conflicting_arguments?.sent, 'amount_cents');
    // Every row's calls went to the one sampled workspace.
    const workspaces = new Set(
      Object.values(rows).flatMap((row) => (row?.sent ?? []).map((call) => call.arguments.workspace)),
    );
    expect([...workspaces]).toEqual(['idem check 000000000000']);
    expect(result.output).not.toContain('workspace=idem {{unique}}');
  }, 60_000);

  it('when nothing but the scope could change, the row is inconclusive and says why (exit 3)', async () => {
    const result = await check(['--json', '--', process.execPath, SCRIPTED, 'scoped']);
    expect(result.exitCode).toBe(3);
    const rows = rowsOf(result, 'close_books');
    expect(rows.conflicting_arguments).toMatchObject({
      result: 'inconclusive',
      summary:
        'not run: no argument can take another valid value (the scope (workspace) is never varied): ' +
        'pass --arg NAME=VALUE for a number, or with {{unique}} in a free string argument',
      sent: [],
    });
    expect(toolOf(result, 'close_books').notes).toContain(
      'no argument can vary per action (no string argument takes {{unique}})',
    );
    expect(result.output).not.toMatch(/--arg '?workspace/);
  }, 60_000);

  it('--scope-field names the scope: an argument named there is never varied', async () => {
    // Marked as scope, amount_cents is left alone; with the currency fixed nothing else can change.
    const result = await check([
      '--arg',
      'currency=EUR',
      '--scope-field',
      'workspace',
      '--scope-field',
      'amount_cents',
      '--json',
      ...payments,
    ]);
    expect(result.exitCode).toBe(3);
    expect(toolOf(result, 'create_payment').scope).toEqual({
      names: ['workspace', 'amount_cents'],
      from: '--scope-field',
    });
    expect(rowsOf(result, 'create_payment').conflicting_arguments?.summary).toContain(
      'the scope (workspace, amount_cents) is never varied',
    );
    expect(await check(['--scope-field', 'tenant', ...payments])).toMatchObject({
      exitCode: 2,
      error:
        '--scope-field tenant: tool create_payment has no argument "tenant" ' +
        '(its arguments: workspace, amount_cents, currency, idempotency_key)',
    });
  }, 60_000);
});
