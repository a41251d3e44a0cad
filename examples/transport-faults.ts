import { IdemClient, IntentJournal, connectTarget } from 'idem/client';
import { TransportFaults } from 'idem/testing';

const target = { url: process.env.IDEM_URL ?? 'http://127.0.0.1:3000/mcp' };
// The server will act and answer; the answer is swallowed on the way back, once.
const faults = new TransportFaults().inject({ fault: 'drop_response', tool: 'create_note' });
const idem = new IdemClient({
  connect: (o) => connectTarget(target, { ...o, wrap: (t) => faults.wrap(t) }),
  journal: IntentJournal.open(process.env.INTENTS_DB ?? './intents.sqlite'),
  policy: { attemptTimeoutMs: 2000 },
});
const outcome = await idem.call('create_note', { workspace: 'default', body: 'Lost on the way back' });
console.log(faults.events.length, outcome.status); // 1 succeeded: one note, found again by its key
await idem.close();
