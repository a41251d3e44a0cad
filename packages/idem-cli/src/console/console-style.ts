/** The console's one stylesheet, served from Idem itself at `<prefix>/style.css` (no CDN). */
export const CONSOLE_CSS = `
:root { color-scheme: light; --fg: #1d2430; --muted: #5b6575; --line: #d8dde5; --bg: #f6f7f9;
  --warn: #8a4b00; --warn-bg: #fff4e0; --bad: #9b1c1c; --bad-bg: #fde8e8; --ok: #135c2c; --ok-bg: #e3f6e8;
  --accent: #1f4fa8; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
  background: var(--bg); }
header { display: flex; gap: 1.5rem; align-items: center; padding: .6rem 1.2rem; background: #fff;
  border-bottom: 1px solid var(--line); }
header strong { font-size: 15px; }
header nav a { margin-right: 1rem; }
header .who { margin-left: auto; color: var(--muted); }
header form { display: inline; }
main { padding: 1rem 1.2rem 3rem; max-width: 1300px; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
h1 { font-size: 20px; margin: .4rem 0 1rem; }
h2 { font-size: 16px; margin: 1.6rem 0 .6rem; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #eef1f5; font-weight: 600; font-size: 13px; }
code, .id { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
.banner { padding: .5rem 1.2rem; background: var(--warn-bg); color: var(--warn); border-bottom: 1px solid #f0d9b5; }
.notice { padding: .6rem .8rem; margin: 0 0 1rem; border-radius: 4px; }
.notice.ok { background: var(--ok-bg); color: var(--ok); }
.notice.error { background: var(--bad-bg); color: var(--bad); }
.counts { display: flex; flex-wrap: wrap; gap: .6rem; margin: 0; padding: 0; list-style: none; }
.counts li { background: #fff; border: 1px solid var(--line); border-radius: 4px; padding: .4rem .8rem; }
.counts b { display: block; font-size: 18px; }
.state { display: inline-block; padding: 0 .4rem; border-radius: 3px; background: #eef1f5; font-size: 12px; }
.state-outcome_unknown, .state-failed { background: var(--bad-bg); color: var(--bad); }
.state-succeeded { background: var(--ok-bg); color: var(--ok); }
.state-running, .state-accepted, .state-cancel_requested { background: var(--warn-bg); color: var(--warn); }
form.filters { display: flex; flex-wrap: wrap; gap: .6rem; align-items: end; margin-bottom: 1rem; }
form.filters label, form.action label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
form.action { background: #fff; border: 1px solid var(--line); border-radius: 4px; padding: .8rem;
  margin: 0 0 1rem; display: grid; gap: .5rem; max-width: 640px; }
form.action h3 { margin: 0; font-size: 14px; }
input, select, textarea { font: inherit; padding: .3rem .4rem; border: 1px solid #b9c1cd; border-radius: 3px;
  color: var(--fg); background: #fff; }
textarea { min-height: 3.2rem; }
button { font: inherit; padding: .35rem .9rem; border-radius: 3px; border: 1px solid var(--accent);
  background: var(--accent); color: #fff; cursor: pointer; justify-self: start; }
button.secondary { background: #fff; color: var(--accent); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; background: #fff;
  border: 1px solid var(--line); padding: .8rem; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
pre { background: #fff; border: 1px solid var(--line); padding: .6rem; overflow: auto; font-size: 12.5px; }
.muted { color: var(--muted); }
.pager { margin-top: .8rem; }
.columns { display: grid; grid-template-columns: minmax(0, 3fr) minmax(280px, 2fr); gap: 1.5rem; }
@media (max-width: 900px) { .columns { grid-template-columns: 1fr; } }
`;
