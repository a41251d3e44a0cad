import type { IncomingMessage, ServerResponse } from 'node:http';
import { systemClock, type Clock, type IdemStore, type JsonObject, type Logger } from 'idem';
import { OPERATION_STATES, providerKeyFor, attemptView, type OperationState } from 'idem/operations';
import { checkHostAndOrigin, type HostOriginPolicy } from '../server/host-origin-policy.js';
import { showView } from '../ops/operation-views.js';
import {
  requestCancelAsOperator,
  requeueDeadLetter,
  resolveOperationAsOperator,
} from '../ops/operator-actions.js';
import { OperatorActionError } from '../ops/operator-error.js';
import { countsByState, oldestFirst, operationsPage, type ListFilters } from './console-data.js';
import { credentialStillValid, verifyOperatorToken, type ConsoleCredentials } from './console-credentials.js';
import { ConsoleSessions, sameToken, type ConsoleSession } from './console-sessions.js';
import { CONSOLE_CSS } from './console-style.js';
import { resultFieldsHint } from './result-fields-hint.js';
import { html, type SafeHtml } from './html.js';
import { layout, type Notice, type PageContext } from './page-layout.js';
import { deadLettersBody, listBody, loginBody, operationBody, overviewBody } from './console-pages.js';

/** How the console is set up: what it reads and writes, who may use it, where it is mounted. */
export interface ConsoleOptions {
  readonly store: IdemStore;
  /** The mount path, e.g. `/console`; every path the console answers starts with it. */
  readonly prefix: string;
  /** The same Host/Origin policy as `/mcp` (DNS rebinding, cross-site requests). */
  readonly policy: HostOriginPolicy;
  /** Operator credentials; `devPrincipal` instead for loopback dev mode. */
  readonly credentials: ConsoleCredentials;
  /** Loopback dev mode: no credential is asked and actions are recorded as this principal. */
  readonly devPrincipal?: string;
  /** Set the session cookie `Secure` (anything but plain http on loopback). */
  readonly secureCookies: boolean;
  /** How long a resolved operation replays, ms. */
  readonly retentionMs: number;
  readonly logger: Logger;
  readonly clock?: Clock;
}

/** The console as a node:http handler: call it for requests whose path starts with the prefix. */
export type ConsoleHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

const COOKIE = 'idem_console';
const MAX_FORM_BYTES = 64 * 1024;
const PAGE_SIZE = 50;

interface Request {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly path: string;
  readonly query: URLSearchParams;
}

/**
 * The operator console: server-rendered HTML pages (no client script) and form POSTs, under
 * `options.prefix`. Every request passes the Host/Origin check first; outside dev mode every page
 * but the sign-in needs a session (made by pasting an operator token), and every POST needs the
 * session's CSRF token. The actions are `idem ops`'s own (src/ops/operator-actions.ts); each is
 * logged with who did it, never with a token or a body.
 */
export function consoleApp(options: ConsoleOptions): ConsoleHandler {
  const clock = options.clock ?? systemClock;
  const prefix = options.prefix.replace(/\/+$/, '');
  const devMode = options.devPrincipal !== undefined;
  const sessions = new ConsoleSessions(options.store, (credential) =>
    credentialStillValid(credential, options.credentials, devMode),
  );
  const { store, logger } = options;

  const send = (res: ServerResponse, status: number, body: string, type = 'text/html; charset=utf-8') => {
    res.writeHead(status, {
      'Content-Type': type,
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'same-origin',
      'Content-Security-Policy':
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    });
    res.end(body);
  };
  const page = (
    r: Request,
    ctx: PageContext,
    status: number,
    title: string,
    body: SafeHtml,
    notice?: Notice,
  ) => send(r.res, status, layout(ctx, title, body, notice).text);
  const redirect = (res: ServerResponse, location: string, cookie?: string) => {
    res.writeHead(303, {
      Location: location,
      'Cache-Control': 'no-store',
      ...(cookie ? { 'Set-Cookie': cookie } : {}),
    });
    res.end();
  };
  const cookieFor = (value: string, maxAgeSec: number) =>
    `${COOKIE}=${value}; Path=${prefix}/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSec}${options.secureCookies ? '; Secure' : ''}`;

  function sessionOf(req: IncomingMessage): Promise<ConsoleSession | undefined> {
    const header = req.headers.cookie ?? '';
    const id = header
      .split(';')
      .map((part) => part.trim().split('='))
      .find(([name]) => name === COOKIE)?.[1];
    return sessions.get(id, clock.now());
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const verdict = checkHostAndOrigin(req, options.policy);
    if (!verdict.ok) {
      logger.warn('console.host_refused', { reason: verdict.reason });
      req.resume();
      return send(res, 403, `Forbidden: ${verdict.message}`, 'text/plain; charset=utf-8');
    }
    const url = new URL(req.url ?? '/', 'http://console.invalid');
    if (url.pathname !== prefix && !url.pathname.startsWith(`${prefix}/`))
      return send(res, 404, 'not found', 'text/plain; charset=utf-8');
    const path = url.pathname.slice(prefix.length) || '/';
    const r: Request = { req, res, path, query: url.searchParams };
    if (path === '/style.css' && req.method === 'GET')
      return send(res, 200, CONSOLE_CSS, 'text/css; charset=utf-8');
    let session = await sessionOf(req);
    if (path === '/login') return login(r, session);
    if (session === undefined && devMode) {
      // Dev mode still binds forms to a session (CSRF), made on the first page.
      if (req.method !== 'GET') return refuseUnauthenticated(r);
      session = await sessions.create(options.devPrincipal as string, clock.now(), 'dev');
      res.setHeader('Set-Cookie', cookieFor(session.id, 8 * 3600));
    }
    if (session === undefined) return refuseUnauthenticated(r);
    const ctx: PageContext = { prefix, principal: session.principal, csrf: session.csrf, devMode };
    if (req.method === 'POST') {
      const form = await readForm(req);
      if (form === undefined) return send(res, 413, 'form too large', 'text/plain; charset=utf-8');
      const given = form.get('csrf') ?? '';
      if (!sameToken(given, session.csrf)) {
        logger.warn('console.csrf_refused', { path });
        return page(r, ctx, 403, 'Refused', htmlNothing(), {
          kind: 'error',
          text: 'Refused: this form is stale or did not come from this console (CSRF check). Reload the page and try again.',
        });
      }
      return post(r, ctx, session, form);
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, POST');
      return send(res, 405, 'method not allowed', 'text/plain; charset=utf-8');
    }
    return get(r, ctx);
  }

  function refuseUnauthenticated(r: Request): void {
    logger.warn('console.unauthenticated', { path: r.path, method: r.req.method ?? '' });
    r.req.resume();
    if (r.req.method === 'GET' || r.req.method === 'HEAD') return redirect(r.res, `${prefix}/login`);
    return send(r.res, 401, 'sign in first', 'text/plain; charset=utf-8');
  }

  async function login(r: Request, current: ConsoleSession | undefined): Promise<void> {
    const ctx: PageContext = { prefix, devMode };
    if (devMode || current !== undefined) return redirect(r.res, `${prefix}/`);
    if (r.req.method === 'GET') return page(r, ctx, 200, 'Sign in', loginBody(ctx));
    if (r.req.method !== 'POST') return send(r.res, 405, 'method not allowed', 'text/plain; charset=utf-8');
    const form = await readForm(r.req);
    const verdict = await verifyOperatorToken(form?.get('token') ?? '', options.credentials);
    if (!verdict.ok) {
      logger.warn('console.sign_in_refused', { reason: verdict.reason });
      return page(r, ctx, 401, 'Sign in', loginBody(ctx), { kind: 'error', text: verdict.message });
    }
    const session = await sessions.create(
      verdict.identity.principal,
      clock.now(),
      verdict.identity.credential,
      verdict.identity.notAfter,
    );
    logger.info('console.signed_in', { principal: session.principal });
    const maxAge = Math.max(1, Math.floor((session.expiresAt - clock.now()) / 1000));
    return redirect(r.res, `${prefix}/`, cookieFor(session.id, maxAge));
  }

  async function get(r: Request, ctx: PageContext): Promise<void> {
    const now = clock.now();
    if (r.path === '/') {
      const [counts, unknown, running, accepted, cancelRequested, dead] = await Promise.all([
        countsByState(store),
        oldestFirst(store, 'outcome_unknown', 100),
        oldestFirst(store, 'running', 50),
        oldestFirst(store, 'accepted', 50),
        oldestFirst(store, 'cancel_requested', 50),
        store.outbox.deadLetters({ limit: 20 }),
      ]);
      const active = [...running, ...cancelRequested, ...accepted];
      return page(
        r,
        ctx,
        200,
        'Overview',
        overviewBody(ctx, { counts, unknown, active, dead, now }),
        noticeOf(r),
      );
    }
    if (r.path === '/operations') {
      const filters = filtersOf(r.query);
      const result = await operationsPage(store, filters, PAGE_SIZE);
      return page(r, ctx, 200, 'Operations', listBody(ctx, filters, result, now));
    }
    if (r.path === '/dead-letters') {
      const dead = await store.outbox.deadLetters({ limit: 500 });
      return page(r, ctx, 200, 'Dead letters', deadLettersBody(ctx, dead), noticeOf(r));
    }
    const match = /^\/operations\/([^/]+)$/.exec(r.path);
    if (match !== null) return operationPage(r, ctx, decodePathPart(match[1] as string), 200, noticeOf(r));
    return page(r, ctx, 404, 'Not found', htmlNothing(), { kind: 'error', text: `No page ${r.path}` });
  }

  async function operationPage(r: Request, ctx: PageContext, id: string, status: number, notice?: Notice) {
    const record = await store.ledger.get(id);
    if (record === undefined)
      return page(r, ctx, 404, 'Not found', htmlNothing(), { kind: 'error', text: `no operation ${id}` });
    const attempts = await store.ledger.attempts(id);
    const view = { ...showView(record), attempts_detail: attempts.map(attemptView) } as Record<
      string,
      unknown
    >;
    const { operation, version } = record.identity;
    const declaration = (await store.tools.get(operation, version)) ?? null;
    const data = {
      record,
      view,
      attempts,
      providerKey: providerKeyFor(record.operationId),
      now: clock.now(),
      resultFields: resultFieldsHint(`${operation} v${version}`, declaration),
    };
    return page(r, ctx, status, `Operation ${id}`, operationBody(ctx, data), notice);
  }

  async function post(r: Request, ctx: PageContext, session: ConsoleSession, form: URLSearchParams) {
    if (r.path === '/logout') {
      await sessions.delete(session.id);
      return redirect(r.res, `${prefix}/login`, cookieFor('', 0));
    }
    const by = session.principal;
    const now = clock.now();
    const text = (name: string) => {
      const value = form.get(name)?.trim();
      return value === undefined || value === '' ? undefined : value;
    };
    const op = /^\/operations\/([^/]+)\/(resolve|correct|cancel)$/.exec(r.path);
    if (op !== null) {
      const id = decodePathPart(op[1] as string);
      const action = op[2] as 'resolve' | 'correct' | 'cancel';
      const back = `${prefix}/operations/${encodeURIComponent(id)}`;
      try {
        if (action === 'cancel') {
          await requestCancelAsOperator(store, { operationId: id, reason: text('reason') ?? '', by, now });
        } else {
          const to = action === 'correct' || text('to') !== 'failed' ? 'succeeded' : 'failed';
          const fields = resultFields(text('result_json'));
          const resourceId = text('resource_id');
          const reason = text('reason');
          const seen = seenStatus(text('seen'));
          await resolveOperationAsOperator(store, {
            operationId: id,
            to,
            by,
            now,
            retentionMs: options.retentionMs,
            ...(action === 'correct' ? { correct: true } : {}),
            ...(seen === undefined ? {} : { from: seen }),
            ...(to === 'succeeded' && resourceId !== undefined ? { resourceId } : {}),
            ...(reason === undefined ? {} : { reason }),
            ...(to === 'succeeded' && fields !== undefined ? { fields } : {}),
          });
        }
      } catch (error) {
        if (!(error instanceof OperatorActionError)) throw error;
        logger.info('console.action_refused', { action, operation_id: id, by, kind: error.kind });
        const hint = error.correctable ? ' Use Correct instead.' : '';
        return operationPage(
          r,
          ctx,
          id,
          error.kind === 'not_found' ? 404 : error.kind === 'usage' ? 400 : 409,
          {
            kind: 'error',
            text: `${error.message}.${hint}`,
          },
        );
      }
      logger.info('console.action', { action, operation_id: id, by });
      return redirect(r.res, `${back}?done=${action}`);
    }
    const requeue = /^\/dead-letters\/(\d{1,15})\/requeue$/.exec(r.path);
    if (requeue !== null) {
      const id = Number(requeue[1]);
      const reason = text('reason');
      if (reason === undefined)
        return page(
          r,
          ctx,
          400,
          'Dead letters',
          deadLettersBody(ctx, await store.outbox.deadLetters({ limit: 500 })),
          {
            kind: 'error',
            text: 'a requeue needs a reason',
          },
        );
      try {
        await requeueDeadLetter(store, id, now);
      } catch (error) {
        if (!(error instanceof OperatorActionError)) throw error;
        return page(
          r,
          ctx,
          404,
          'Dead letters',
          deadLettersBody(ctx, await store.outbox.deadLetters({ limit: 500 })),
          {
            kind: 'error',
            text: error.message,
          },
        );
      }
      // The outbox keeps no audit column: the requeue is recorded in the log, with who and why.
      logger.info('console.action', { action: 'requeue', dead_letter: id, by, reason });
      return redirect(r.res, `${prefix}/dead-letters?done=requeue&id=${id}`);
    }
    return page(r, ctx, 404, 'Not found', htmlNothing(), { kind: 'error', text: `No action ${r.path}` });
  }

  return async (req, res) => {
    try {
      await handle(req, res);
    } catch (error) {
      logger.error('console.error', { code: (error as { code?: string }).code ?? 'internal' });
      if (!res.headersSent) send(res, 500, 'internal error', 'text/plain; charset=utf-8');
      else res.end();
    }
  };
}

const DONE: Readonly<Record<string, string>> = {
  resolve: 'Resolved: the audit records who, when and why. Replays now return the settled result.',
  correct: 'Corrected to succeeded: the audit records who, when and why. Replays now return it.',
  cancel: 'Cancel requested: the worker settles it (cancelled, or succeeded if the work already happened).',
  requeue: 'Requeued: the dead letter is due again, its attempts counted from 0.',
};

function noticeOf(r: Request): Notice | undefined {
  const done = r.query.get('done');
  if (done === null || !Object.hasOwn(DONE, done)) return undefined;
  const id = r.query.get('id');
  return {
    kind: 'ok',
    text: `${DONE[done] as string}${id !== null && /^\d+$/.test(id) ? ` (dead letter ${id})` : ''}`,
  };
}

/** A path segment decoded; a malformed escape stays as it is (no such operation, not an error). */
function decodePathPart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

function htmlNothing(): SafeHtml {
  return html``;
}

function resultFields(text: string | undefined): JsonObject | undefined {
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new OperatorActionError(
      'usage',
      "Result fields must be a JSON object of the tool's own fields (see the example in the box)",
      {
        field: 'fields',
      },
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new OperatorActionError('usage', 'Result fields must be a JSON object', { field: 'fields' });
  return parsed as JsonObject;
}

function timeParam(value: string | null): number | undefined {
  if (value === null || value === '') return undefined;
  const ms = Date.parse(/Z|[+-]\d\d:?\d\d$/.test(value) ? value : `${value}Z`);
  return Number.isNaN(ms) ? undefined : ms;
}

function filtersOf(query: URLSearchParams): ListFilters {
  const text = (name: string) => {
    const v = query.get(name)?.trim();
    return v === undefined || v === '' ? undefined : v;
  };
  const from = timeParam(query.get('from'));
  const to = timeParam(query.get('to'));
  const cursor = /^[\w-]{1,200}$/.exec(text('after') ?? '');
  const filters: Record<string, unknown> = {
    state: text('state'),
    operation: text('operation'),
    workspace: text('workspace'),
    principal: text('principal'),
    from,
    to,
    after: cursor === null ? undefined : cursor[0],
  };
  return Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== undefined)) as ListFilters;
}

/** The url-encoded form body, or undefined when it is larger than MAX_FORM_BYTES. */
async function readForm(req: IncomingMessage): Promise<URLSearchParams | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) {
      req.resume();
      return undefined;
    }
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** The status a page was rendered with (its forms' hidden `seen`), if it names one. */
function seenStatus(value: string | undefined): OperationState | undefined {
  return OPERATION_STATES.find((state) => state === value);
}
