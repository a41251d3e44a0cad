import type { ResultFieldsHint } from './result-fields-hint.js';
import type { OperationRecord, OutboxMessage } from 'idem/store';
import type { AttemptRecord } from 'idem/store';
import { OPERATION_STATES } from 'idem/operations';
import { html, type SafeHtml } from './html.js';
import { csrfField, formatDuration, formatTime, stateLabel, type PageContext } from './page-layout.js';
import type { ListFilters, OperationsPage } from './console-data.js';

/** The sign-in form: the operator pastes a token (tokens-file operator entry or JWT). */
export function loginBody(ctx: PageContext): SafeHtml {
  return html`<h1>Sign in</h1>
    <form class="action" method="post" action="${ctx.prefix}/login">
      <label for="token">Operator token</label>
      <input id="token" name="token" type="password" autocomplete="off" required />
      <p class="muted">
        A tokens-file entry with "role": "operator", or a JWT access token with the scope idem:operator.
      </p>
      <button type="submit">Sign in</button>
    </form>`;
}

function operationLink(ctx: PageContext, record: OperationRecord): SafeHtml {
  return html`<a class="id" href="${ctx.prefix}/operations/${encodeURIComponent(record.operationId)}"
    >${record.operationId}</a
  >`;
}

function operationsTable(
  ctx: PageContext,
  rows: readonly OperationRecord[],
  now: number,
  waiting: boolean,
): SafeHtml {
  if (rows.length === 0) return html`<p class="muted">None.</p>`;
  return html`<table>
    <thead>
      <tr>
        <th>Operation id</th>
        <th>State</th>
        <th>Tool</th>
        <th>Principal</th>
        <th>Workspace</th>
        <th>Created</th>
        ${waiting ? html`<th>Waiting</th>` : html`<th>Resource</th>`}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (r) =>
          html`<tr>
            <td>${operationLink(ctx, r)}</td>
            <td>${stateLabel(r.status)}</td>
            <td>${r.identity.operation}@v${r.identity.version}</td>
            <td>${r.identity.principal}</td>
            <td>${r.identity.workspace}</td>
            <td>${formatTime(r.createdAt)}</td>
            <td>${waiting ? formatDuration(now - r.updatedAt) : (r.resourceId ?? '-')}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function deadLettersTable(ctx: PageContext, dead: readonly OutboxMessage[]): SafeHtml {
  if (dead.length === 0) return html`<p class="muted">None.</p>`;
  return html`<table>
    <thead>
      <tr>
        <th>Id</th>
        <th>Dedup key</th>
        <th>Destination</th>
        <th>Attempts</th>
        <th>Last error</th>
        <th>Dead since</th>
        <th></th>
      </tr>
    </thead>
    <tbody>
      ${dead.map(
        (m) =>
          html`<tr>
            <td class="id">${m.id}</td>
            <td class="id">${m.dedupKey}</td>
            <td>${m.destination}</td>
            <td>${m.attempts}</td>
            <td>${m.lastError ?? '-'}</td>
            <td>${formatTime(m.deadAt)}</td>
            <td>
              <form method="post" action="${ctx.prefix}/dead-letters/${m.id}/requeue">
                ${csrfField(ctx)}
                <label>Reason <input name="reason" required /></label>
                <button type="submit" aria-label="Requeue dead letter ${m.id}">Requeue</button>
              </form>
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** What the overview shows. */
export interface OverviewData {
  readonly counts: ReadonlyArray<{ state: string; count: number | undefined }>;
  readonly unknown: readonly OperationRecord[];
  readonly active: readonly OperationRecord[];
  readonly dead: readonly OutboxMessage[];
  readonly now: number;
}

/**
 * The overview: what needs a person first (outcome_unknown, oldest first, with how long each has
 * waited), then dead letters, running and stuck work (a lease past its end), and counts by state.
 */
export function overviewBody(ctx: PageContext, data: OverviewData): SafeHtml {
  const stuck = data.active.filter(
    (r) => r.leaseExpiresAt !== undefined && r.leaseExpiresAt < data.now && r.status !== 'accepted',
  );
  return html`<h1>Overview</h1>
    <ul class="counts">
      ${data.counts.map(
        (c) =>
          html`<li>
            <a href="${ctx.prefix}/operations?state=${c.state}"><b>${c.count ?? 'list'}</b>${c.state}</a>
          </li>`,
      )}
    </ul>
    <h2>Needs a person: outcome_unknown, oldest first</h2>
    ${operationsTable(ctx, data.unknown, data.now, true)}
    <h2>Dead letters</h2>
    ${deadLettersTable(ctx, data.dead)}
    <h2>Running and waiting work</h2>
    ${operationsTable(ctx, data.active, data.now, true)}
    <h2>Stuck: running with a lease past its end</h2>
    ${operationsTable(ctx, stuck, data.now, true)}`;
}

/** The operations list with its filters and a link to the next page. */
export function listBody(
  ctx: PageContext,
  filters: ListFilters,
  page: OperationsPage,
  now: number,
): SafeHtml {
  const value = (v: string | number | undefined) => (v === undefined ? '' : String(v));
  const isoInput = (ms: number | undefined) =>
    ms === undefined ? '' : new Date(ms).toISOString().slice(0, 16);
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries({
    state: filters.state,
    operation: filters.operation,
    workspace: filters.workspace,
    principal: filters.principal,
    from: filters.from === undefined ? undefined : new Date(filters.from).toISOString(),
    to: filters.to === undefined ? undefined : new Date(filters.to).toISOString(),
  }))
    if (v !== undefined) query.set(k, v);
  if (page.next !== undefined) query.set('after', page.next);
  return html`<h1>Operations</h1>
    <form class="filters" method="get" action="${ctx.prefix}/operations">
      <label
        >State
        <select name="state">
          <option value="">any</option>
          ${OPERATION_STATES.map(
            (s) => html`<option value="${s}" ${filters.state === s ? html` selected` : ''}>${s}</option>`,
          )}
        </select></label
      >
      <label>Operation <input name="operation" value="${value(filters.operation)}" /></label>
      <label>Workspace <input name="workspace" value="${value(filters.workspace)}" /></label>
      <label>Principal <input name="principal" value="${value(filters.principal)}" /></label>
      <label
        >Created from (UTC) <input name="from" type="datetime-local" value="${isoInput(filters.from)}"
      /></label>
      <label
        >Created before (UTC) <input name="to" type="datetime-local" value="${isoInput(filters.to)}"
      /></label>
      <button type="submit">Filter</button>
    </form>
    ${operationsTable(ctx, page.rows, now, false)}
    <p class="pager">
      ${
        page.next === undefined
          ? html`<span class="muted">End of list.</span>`
          : html`<a href="${ctx.prefix}/operations?${query.toString()}">Next page</a>`
      }
    </p>`;
}

/** What the operation page shows besides the record. */
export interface OperationData {
  readonly record: OperationRecord;
  /** `idem ops show`'s view of it. */
  readonly view: Record<string, unknown>;
  readonly attempts: readonly AttemptRecord[];
  readonly providerKey: string;
  readonly now: number;
  /** What the tool's server stored about its result fields: the boxes' example and rules. */
  readonly resultFields: ResultFieldsHint;
}

function windowText(data: OperationData): string {
  const first = data.attempts[0];
  if (first === undefined) return 'none yet: no attempt has started, so no effect can have happened';
  const last = data.attempts.at(-1) as AttemptRecord;
  const end = last.endedAt === undefined ? 'now (an attempt is open)' : formatTime(last.endedAt);
  return `${formatTime(first.startedAt)} to ${end}`;
}

function timeline(data: OperationData): SafeHtml {
  const r = data.record;
  const items: SafeHtml[] = [
    html`<tr>
      <td>${formatTime(r.createdAt)}</td>
      <td>accepted</td>
      <td>${r.kind === 'durable' ? 'recorded, for the worker' : 'recorded with its effect'}</td>
      <td></td>
    </tr>`,
  ];
  for (const a of data.attempts) {
    items.push(
      html`<tr>
        <td>${formatTime(a.startedAt)}</td>
        <td>attempt ${a.number}: ${a.outcome ?? 'running'}</td>
        <td>${a.detail ?? ''} <span class="muted">worker ${a.workerId}</span></td>
        <td>
          ${
            a.endedAt === undefined
              ? formatDuration(data.now - a.startedAt) + ' so far'
              : formatDuration(a.endedAt - a.startedAt)
          }
        </td>
      </tr>`,
    );
  }
  for (const c of r.audit ?? []) {
    items.push(
      html`<tr>
        <td>${formatTime(c.at)}</td>
        <td>${c.action} by ${c.by}</td>
        <td>
          ${c.from} →
          ${c.to}${c.resourceId === undefined ? '' : `, resource ${c.resourceId}`}${c.reason === undefined ? '' : `: ${c.reason}`}
        </td>
        <td></td>
      </tr>`,
    );
  }
  return html`<table>
    <thead>
      <tr>
        <th>When</th>
        <th>What</th>
        <th>Detail</th>
        <th>Duration</th>
      </tr>
    </thead>
    <tbody>
      ${items}
    </tbody>
  </table>`;
}

function actions(ctx: PageContext, record: OperationRecord, hint: ResultFieldsHint): SafeHtml {
  const action = `${ctx.prefix}/operations/${encodeURIComponent(record.operationId)}`;
  const forms: SafeHtml[] = [];
  if (record.status === 'outcome_unknown') {
    forms.push(
      html`<form class="action" method="post" action="${action}/resolve">
          ${csrfField(ctx)}
          <h3>Resolve as succeeded</h3>
          <label for="resolve-resource">Resource id</label
          ><input id="resolve-resource" name="resource_id" required />
          <label for="resolve-fields">Result fields (JSON object, optional)</label
          ><textarea id="resolve-fields" name="result_json" placeholder="${hint.example}"></textarea>
          <p class="muted result-fields-hint">${hint.text}</p>
          <label for="resolve-reason">Reason</label><input id="resolve-reason" name="reason" />
          <input type="hidden" name="to" value="succeeded" />
          <input type="hidden" name="seen" value="${record.status}" />
          <button type="submit">Resolve</button>
        </form>
        <form class="action" method="post" action="${action}/resolve">
          ${csrfField(ctx)}
          <h3>Resolve as failed</h3>
          <label for="fail-reason">Reason</label><input id="fail-reason" name="reason" required />
          <input type="hidden" name="to" value="failed" />
          <input type="hidden" name="seen" value="${record.status}" />
          <button type="submit">Resolve as failed</button>
        </form>`,
    );
  }
  const personsSuccess = record.status === 'succeeded' && record.resolvedBy !== undefined;
  if (record.status === 'failed' || record.status === 'cancelled' || personsSuccess) {
    forms.push(
      html`<form class="action" method="post" action="${action}/correct">
        ${csrfField(ctx)}
        <h3>${personsSuccess ? 'Correct this settled success' : 'Correct to succeeded'}</h3>
        <label for="correct-resource">Resource id</label
        ><input id="correct-resource" name="resource_id" required />
        <label for="correct-fields">Result fields (JSON object, optional)</label
        ><textarea id="correct-fields" name="result_json" placeholder="${hint.example}"></textarea>
        <p class="muted result-fields-hint">${hint.text}</p>
        <label for="correct-reason">Reason</label><input id="correct-reason" name="reason" required />
        <input type="hidden" name="seen" value="${record.status}" />
        <button type="submit">Correct</button>
      </form>`,
    );
  }
  if (record.status === 'accepted' || record.status === 'running') {
    forms.push(
      html`<form class="action" method="post" action="${action}/cancel">
        ${csrfField(ctx)}
        <h3>Request a cancel</h3>
        <label for="cancel-reason">Reason</label><input id="cancel-reason" name="reason" required />
        <button type="submit">Cancel</button>
      </form>`,
    );
  }
  return forms.length === 0
    ? html`<p class="muted">No action applies to a ${record.status} operation.</p>`
    : html`${forms}`;
}

/** One operation: facts, timeline, `idem ops show`'s view, and the actions its state allows. */
export function operationBody(ctx: PageContext, data: OperationData): SafeHtml {
  const r = data.record;
  const v = data.view;
  const nextAction = typeof v.next_action === 'string' ? v.next_action : undefined;
  return html`<h1>Operation <span class="id" id="operation-id">${r.operationId}</span></h1>
    <div class="columns">
      <div>
        <dl class="facts">
          <dt>State</dt>
          <dd>${stateLabel(r.status)}</dd>
          <dt>Tool</dt>
          <dd>${r.identity.operation}@v${r.identity.version} (${r.kind})</dd>
          <dt>Principal</dt>
          <dd>${r.identity.principal}</dd>
          <dt>Workspace</dt>
          <dd>${r.identity.workspace}</dd>
          <dt>Idempotency key</dt>
          <dd class="id">${r.identity.key}</dd>
          <dt>Provider key</dt>
          <dd class="id">${data.providerKey}</dd>
          <dt>Resource id</dt>
          <dd class="id">${r.resourceId ?? '-'}</dd>
          <dt>Created</dt>
          <dd>
            ${formatTime(r.createdAt)}
            <span class="muted">(${formatDuration(data.now - r.createdAt)} ago)</span>
          </dd>
          <dt>Updated</dt>
          <dd>${formatTime(r.updatedAt)}</dd>
          <dt>Effect may have happened</dt>
          <dd>${windowText(data)}</dd>
          <dt>Next action</dt>
          <dd>${nextAction ?? '-'}</dd>
        </dl>
        <h2>Timeline</h2>
        ${timeline(data)}
        <h2>As idem ops show prints it</h2>
        <pre>${JSON.stringify(v, null, 2)}</pre>
      </div>
      <div>
        <h2>Actions</h2>
        ${actions(ctx, r, data.resultFields)}
      </div>
    </div>`;
}

/** Every dead letter, oldest first, each with its Requeue button. */
export function deadLettersBody(ctx: PageContext, dead: readonly OutboxMessage[]): SafeHtml {
  return html`<h1>Dead letters</h1>
    <p class="muted">Outbox messages (webhooks) given up on. Payloads are never shown: they are bodies.</p>
    ${deadLettersTable(ctx, dead)}`;
}
