import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { Executor } from 'idem';
import { openSqlite, SqliteStore } from 'idem/sqlite';
import { attachAuthInfo, principalAuthInfo, registerIdempotentTool } from 'idem/mcp';

const db = openSqlite(process.env.TODOS_DB ?? './todos.sqlite');
db.exec('CREATE TABLE IF NOT EXISTS todos (id TEXT PRIMARY KEY, workspace TEXT, title TEXT)');
const executor = new Executor({
  store: new SqliteStore(db), // Idem's tables go into the same file as yours
  authorize: (principal, workspace) => principal === 'me' && workspace === 'home', // also before replays
});

const server = new McpServer({ name: 'todos', version: '1.0.0' });
registerIdempotentTool(server, executor, {
  name: 'add_todo',
  version: 1,
  description: 'Adds a todo.',
  inputSchema: z.object({ title: z.string().min(1) }), // Idem adds workspace and idempotency_key
  effect: (tx, args) => {
    // Runs once per key, in the transaction that writes Idem's receipt: both commit, or neither.
    const id = `todo_${crypto.randomUUID()}`;
    tx.prepare('INSERT INTO todos VALUES (?, ?, ?)').run(id, args.workspace, args.title);
    return { resource_id: id };
  },
});

const transport = new StdioServerTransport();
await server.connect(transport);
attachAuthInfo(transport, principalAuthInfo('me')); // over stdio this process acts as one principal
