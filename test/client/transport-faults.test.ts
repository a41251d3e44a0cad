import { afterEach, describe, expect, it } from 'vitest';
import { IntentJournal } from '../../packages/idem/src/client/intent-journal.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { TransportFaults } from '../../packages/idem/src/testing/transport-faults.js';
import { ScriptedServer, result, tempJournal } from '../helpers/client-fixtures.js';
import { cleanup } from '../helpers/mcp-fixtures.js';

afterEach(cleanup);

const echo = (call: { args: Record<string, unknown> }) => result({ echo: call.args.n });

describe('TransportFaults', () => {
  it('hits only matching tools/call requests, after `skip`, `times` times, and records each hit', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock).script('a', echo).script('b', echo);
    const seen: number[] = [];
    const faults = new TransportFaults({ onFault: (e) => seen.push(e.requestId as number) }).inject({
      fault: 'drop_request',
      tool: 'a',
      skip: 1,
      times: 2,
    });
    const client = await server.connect((t) => faults.wrap(t));
    const call = (tool: string, n: number) =>
      client.callTool({ name: tool, arguments: { n } }, { timeout: 50 }).then(
        (r) => (r.structuredContent as { echo: number }).echo,
        () => 'lost',
      );

    expect(await call('a', 1)).toBe(1); // skipped
    expect(await call('b', 2)).toBe(2); // another tool
    expect(await call('a', 3)).toBe('lost');
    expect(await call('a', 4)).toBe('lost');
    expect(await call('a', 5)).toBe(5); // times exhausted
    expect(server.callsOf('a').map((c) => c.args.n)).toEqual([1, 5]); // dropped requests never arrived
    expect(faults.events.map((e) => [e.fault, e.tool])).toEqual([
      ['drop_request', 'a'],
      ['drop_request', 'a'],
    ]);
    expect(seen).toHaveLength(2);
    expect(faults.armed).toBe(0);
    await client.close();
  });

  it('drop_response: the server acted, the answer is kept as evidence and never delivered', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock).script('a', echo);
    const faults = new TransportFaults().inject({ fault: 'drop_response' });
    const client = await server.connect((t) => faults.wrap(t));
    await expect(client.callTool({ name: 'a', arguments: { n: 7 } }, { timeout: 50 })).rejects.toThrow(
      /timed out/,
    );
    expect(server.calls).toHaveLength(1);
    const response = faults.events[0]?.response as { result?: { structuredContent?: unknown } };
    expect(response.result?.structuredContent).toEqual({ echo: 7 });
    await client.close();
  });

  it('delay_response waits on the injected clock; close_before_response closes the connection', async () => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock).script('a', echo);
    const faults = new TransportFaults({ clock })
      .inject({ fault: 'delay_response', delayMs: 1_000 })
      .inject({ fault: 'close_before_response' });
    const client = await server.connect((t) => faults.wrap(t));
    let answered = false;
    const late = client.callTool({ name: 'a', arguments: { n: 1 } }).then((r) => {
      answered = true;
      return r.structuredContent;
    });
    while (faults.events.length === 0) await new Promise((r) => setImmediate(r));
    clock.advance(999);
    await new Promise((r) => setImmediate(r));
    expect(answered).toBe(false);
    clock.advance(1);
    expect(await late).toEqual({ echo: 1 });

    let closed = false;
    client.onclose = () => (closed = true);
    await expect(client.callTool({ name: 'a', arguments: { n: 2 } })).rejects.toThrow(/Connection closed/);
    expect(closed).toBe(true);
    expect(server.calls).toHaveLength(2);
    expect(() => faults.inject({ fault: 'delay_response' })).toThrow(/delayMs/);
  });
});

describe('IntentJournal', () => {
  it('keeps intents across reopening, lists the unsettled ones oldest first, and forgets on request', () => {
    const clock = new FakeClock();
    const { journal, path } = tempJournal(clock);
    const base = { tool: 'create_note', keyField: 'idempotency_key' };
    journal.begin({ ...base, intentId: 'one', key: 'k1', args: { body: 'a' } });
    clock.advance(1);
    journal.begin({ ...base, intentId: 'two', key: 'k2', args: { body: 'secret' }, keepArguments: false });
    expect(() => journal.begin({ ...base, intentId: 'one', key: 'k3', args: {} })).toThrow(/already/);
    journal.recordOperationId('one', 'op_1');
    journal.recordOperationId('one', 'op_other'); // the first one seen stays
    journal.close();

    const reopened = IntentJournal.open(path, { clock });
    expect(reopened.unsettled().map((i) => [i.intentId, i.key, i.operationId, i.args])).toEqual([
      ['one', 'k1', 'op_1', { body: 'a' }],
      ['two', 'k2', undefined, undefined],
    ]);
    reopened.recordOutcome({
      status: 'succeeded',
      intentId: 'one',
      tool: 'create_note',
      key: 'k1',
      operationId: 'op_1',
      attempts: 1,
      result: { note_id: 'n' },
      replayed: false,
    });
    expect(reopened.unsettled().map((i) => i.intentId)).toEqual(['two']);
    expect(reopened.list({ status: 'succeeded' }).map((i) => i.outcome?.status)).toEqual(['succeeded']);
    expect(reopened.export('two')).not.toHaveProperty('args');
    expect(reopened.remove('two')).toBe(true);
    expect(reopened.get('two')).toBeUndefined();
    expect(() => reopened.import({ format: 'idem.intent/1' } as never)).toThrow(/handoff/);
    expect(() =>
      reopened.import({ ...reopened.export('one'), intentId: 'three', args: { body: 'changed' } }),
    ).toThrow(/argsHash/);
    reopened.close();
  });
});
