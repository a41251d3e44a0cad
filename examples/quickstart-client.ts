import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = process.env.IDEM_URL ?? 'http://127.0.0.1:3000/mcp'; // where `npx idem serve` listens
const client = new Client({ name: 'demo', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const args = { idempotency_key: crypto.randomUUID(), workspace: 'default', body: 'Investigate the parser' };
const first = await client.callTool({ name: 'create_note', arguments: args });
console.log(JSON.stringify(first.structuredContent));
// {"status":"succeeded","operation_id":"op_…","resource_id":"note_…","note_id":"note_…","replayed":false}
// The reply was lost? Ask again with the same key:
const retry = await client.callTool({ name: 'create_note', arguments: args });
console.log(JSON.stringify(retry.structuredContent));
// the same ids, "replayed":true — and still exactly one note
await client.close();
