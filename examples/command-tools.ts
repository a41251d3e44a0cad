import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { Executor } from 'idem';
import { openSqlite, SqliteStore } from 'idem/sqlite';
import { attachAuthInfo, principalAuthInfo } from 'idem/mcp';
import { CommandHandler, loadCommandsFile, registerCommandTools, startCommandWorkers } from 'idem/commands';

const dbPath = process.env.COMMANDS_DB ?? './commands.sqlite';
const store = new SqliteStore(openSqlite(dbPath));
const executor = new Executor({ store, authorize: (principal) => principal === 'alice' });

// Only these named commands can run; the file is checked here, strictly.
const handler = new CommandHandler({
  commands: loadCommandsFile(process.env.COMMANDS_FILE ?? './commands.json'),
  outputDir: `${dbPath}.commands`, // one bounded output file per run, beside the database
  outputLimitBytes: 1024 * 1024,
  killGraceMs: 5000, // SIGTERM to the process group, then SIGKILL
});

const server = new McpServer({ name: 'commands', version: '1.0.0' });
registerCommandTools(server, { executor, handler }); // run_command, read_command_output
const stopWorkers = startCommandWorkers({ store, handler, concurrency: 2 });

const transport = new StdioServerTransport();
await server.connect(transport);
attachAuthInfo(transport, principalAuthInfo('alice'));
transport.onclose = () => void stopWorkers().then(() => store.close());
