import { html, type SafeHtml } from './html.js';

/** What every page knows of its request: where the console is mounted, who is signed in. */
export interface PageContext {
  /** The mount path, e.g. `/console` (no trailing slash). */
  readonly prefix: string;
  /** The signed-in operator, absent on the sign-in page. */
  readonly principal?: string;
  /** The session's form token, put in every form. */
  readonly csrf?: string;
  /** Loopback dev mode: no credential is asked. */
  readonly devMode: boolean;
}

/** A notice above the page: what an action did, or why it was refused. */
export interface Notice {
  readonly kind: 'ok' | 'error';
  readonly text: string;
}

/** The hidden field every form carries (the session's CSRF token). */
export function csrfField(ctx: PageContext): SafeHtml {
  return html`<input type="hidden" name="csrf" value="${ctx.csrf ?? ''}" />`;
}

/** "2h 3m", "45s", "0s": how long, for an operator. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const parts = [d > 0 ? `${d}d` : '', h > 0 ? `${h}h` : '', m > 0 ? `${m}m` : '', `${s % 60}s`];
  return (
    parts
      .filter((p) => p !== '')
      .slice(0, 2)
      .join(' ') || '0s'
  );
}

/** Epoch ms as `2026-12-02 14:05:09Z`. */
export function formatTime(ms: number | undefined): string {
  if (ms === undefined) return '-';
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
}

/** A state as a small coloured label. */
export function stateLabel(state: string): SafeHtml {
  return html`<span class="state state-${state}">${state}</span>`;
}

/** The whole page: header with navigation and sign-out, the dev-mode banner, the notice, the body. */
export function layout(ctx: PageContext, title: string, body: SafeHtml, notice?: Notice): SafeHtml {
  const p = ctx.prefix;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · Idem console</title>
        <link rel="stylesheet" href="${p}/style.css" />
      </head>
      <body>
        <header>
          <strong>Idem console</strong>
          ${
            ctx.principal === undefined
              ? ''
              : html`<nav>
                    <a href="${p}/">Overview</a><a href="${p}/operations">Operations</a
                    ><a href="${p}/dead-letters">Dead letters</a>
                  </nav>
                  <span class="who">Signed in as <b>${ctx.principal}</b></span>
                  ${
                    ctx.devMode
                      ? ''
                      : html`<form method="post" action="${p}/logout">
                          ${csrfField(ctx)}<button class="secondary" type="submit">Sign out</button>
                        </form>`
                  }`
          }
        </header>
        ${
          ctx.devMode
            ? html`<div class="banner" role="status">
                Loopback dev mode: no credential is asked (no tokens file and no JWT issuer). Actions are
                recorded as ${ctx.principal ?? 'operator'}.
              </div>`
            : ''
        }
        <main>
          ${notice === undefined ? '' : html`<p class="notice ${notice.kind}" role="${notice.kind === 'error' ? 'alert' : 'status'}">${notice.text}</p>`}
          ${body}
        </main>
      </body>
    </html> `;
}
