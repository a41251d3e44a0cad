import { IdemClient, IntentJournal, connectTarget } from 'idem/client';

const url = process.env.IDEM_URL ?? 'http://127.0.0.1:3000/mcp';
const idem = new IdemClient({
  connect: (options) => connectTarget({ url }, options), // or { command, args } for stdio
  // Each intent (its key and arguments) is written here before its first attempt.
  journal: IntentJournal.open(process.env.INTENTS_DB ?? './intents.sqlite'),
});
for (const intent of idem.unsettled()) await idem.resume(intent.intentId); // after a crash: same keys
const outcome = await idem.call('create_note', { workspace: 'default', body: 'Investigate the parser' });
if (outcome.status === 'succeeded') console.log(outcome.result.note_id);
else if (outcome.status === 'failed') console.error(outcome.error.code);
else console.log(outcome.nextAction); // outcome_unknown: the intent stays in the journal
await idem.close();
