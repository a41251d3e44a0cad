import { xmcpUndeclaredFieldsGuard } from 'idem/xmcp';
import { createTicket } from './tickets.js';

// xmcp runs the middlewares of this array in order, on the http transport (Express-style).
// First your token check; here a map given as
// TICKETS_TOKENS='{"<token>": {"principal": "alice", "workspaces": ["team-a"]}}'. What it puts in
// `req.auth` reaches a tool as `extra.authInfo`: Idem reads `extra.principal`, and
// authorizeByGrant `extra.workspaces`.
type Grant = { principal: string; workspaces: string[] };
type Request = { headers: { authorization?: string }; auth?: unknown };
type Response = { status(code: number): Response; set(name: string, value: string): Response; end(): void };

const tokens = new Map(
  Object.entries(JSON.parse(process.env.TICKETS_TOKENS ?? '{}') as Record<string, Grant>),
);

function auth(req: Request, res: Response, next: () => void): void {
  const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
  const grant = token === undefined ? undefined : tokens.get(token);
  if (token === undefined || grant === undefined) {
    res.status(401).set('WWW-Authenticate', 'Bearer').end();
    return;
  }
  const extra = { principal: grant.principal, workspaces: grant.workspaces };
  req.auth = { token, clientId: grant.principal, scopes: [], extra };
  next();
}

// Then Idem's guard: xmcp copies only the declared fields of a call's arguments, so a field the tool
// does not declare would be dropped; the guard answers such a call `invalid_argument` before xmcp.
export default [auth, xmcpUndeclaredFieldsGuard([createTicket])];
