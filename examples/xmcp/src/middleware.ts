// An xmcp middleware (Express-style on the http transport): your token check; here a map given as
// TICKETS_TOKENS='{"<token>": {"principal": "alice", "workspaces": ["team-a"]}}'. What it puts in
// `req.auth` reaches a tool as `extra.authInfo`: Idem reads `extra.principal`, and
// authorizeByGrant `extra.workspaces`.
type Grant = { principal: string; workspaces: string[] };
type Request = { headers: { authorization?: string }; auth?: unknown };
type Response = { status(code: number): Response; set(name: string, value: string): Response; end(): void };

const tokens = new Map(
  Object.entries(JSON.parse(process.env.TICKETS_TOKENS ?? '{}') as Record<string, Grant>),
);

export default function middleware(req: Request, res: Response, next: () => void): void {
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
