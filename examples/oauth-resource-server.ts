import { createServer } from 'node:http';
import { NodeStreamableHTTPServerTransport, hostHeaderValidation } from '@modelcontextprotocol/node';
import {
  McpServer,
  bearerAuthChallengeResponse,
  getOAuthProtectedResourceMetadataUrl,
  verifyBearerToken,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { Executor } from 'idem';
import { openSqlite, SqliteStore } from 'idem/sqlite';
import { authorizeByGrant, idempotentTool, jwtVerifier, registerIdemTool } from 'idem/mcp';

const resource = new URL(process.env.RESOURCE_URL ?? 'http://127.0.0.1:3001/mcp'); // this server, as clients name it
const auth = {
  // Signature, iss, aud = resource, exp/nbf; AuthInfo.extra = { principal: sub, workspaces: claim }.
  verifier: jwtVerifier({
    issuer: process.env.ISSUER!,
    jwksUrl: process.env.JWKS_URL!,
    audience: resource.href,
  }),
  requiredScopes: ['tickets'],
  resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(resource),
  expectedResource: resource,
};
const db = openSqlite(process.env.TICKETS_DB ?? './tickets.sqlite');
db.exec('CREATE TABLE IF NOT EXISTS tickets (id TEXT PRIMARY KEY, workspace TEXT, title TEXT)');
const insert = db.prepare('INSERT INTO tickets (id, workspace, title) VALUES (?, ?, ?)');
// authorizeByGrant: a call may act in the workspaces its own token lists, and nowhere else.
const executor = new Executor({ store: new SqliteStore(db), authorize: authorizeByGrant });
const createTicket = idempotentTool(executor, {
  name: 'create_ticket',
  version: 1,
  description: 'Opens a ticket.',
  inputSchema: z.object({ title: z.string().min(1).max(200) }),
  effect: (_db, args) => {
    const id = `t_${crypto.randomUUID()}`;
    insert.run(id, args.workspace, args.title);
    return { resource_id: id, ticket_id: id };
  },
});

const allowedHost = hostHeaderValidation(['localhost', '127.0.0.1', '[::1]', resource.hostname]);
createServer(async (req, res) => {
  if (!allowedHost(req, res)) return; // DNS rebinding: 403 for any other Host
  if (req.url === new URL(auth.resourceMetadataUrl).pathname) {
    // RFC 9728: where clients that got a 401 find the authorization server.
    const metadata = { resource: resource.href, authorization_servers: [process.env.ISSUER] };
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(metadata));
    return;
  }
  let authInfo;
  try {
    authInfo = await verifyBearerToken(req.headers.authorization, auth);
  } catch (error) {
    const challenge = bearerAuthChallengeResponse(error, auth); // 401/403 + WWW-Authenticate
    res.writeHead(challenge.status, Object.fromEntries(challenge.headers)).end(await challenge.text());
    return;
  }
  const server = new McpServer({ name: 'tickets', version: '1.0.0' });
  registerIdemTool(server, createTicket);
  const transport = new NodeStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  await transport.handleRequest(Object.assign(req, { auth: authInfo }), res);
}).listen(Number(resource.port), resource.hostname);
