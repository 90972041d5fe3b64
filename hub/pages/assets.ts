import { createHash } from 'node:crypto';
import type Router from '@koa/router';

// The admin UI's and the portal's one stylesheet, one small script and the icon, served from the
// hub process (no front-end build). Commands shown to copy (a page's own <pre>) never wrap: a
// flag cut at its hyphen would be copied wrong; they scroll instead. The script only improves what already works without it: dates
// shown in the viewer's time zone, and a confirmation before a form marked data-confirm.

const CSS = `
:root { --ink: #1d2430; --muted: #5b6675; --line: #d8dde4; --bg: #f6f7f9; --card: #fff; --accent: #1f5fbf; --danger: #b3261e; --ok: #1e7a3c; --warn: #8a5a00; }
* { box-sizing: border-box; }
html { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
body { margin: 0; }
a { color: var(--accent); }
header.top { background: #1d2430; color: #fff; padding: .6rem 1rem; display: flex; flex-wrap: wrap; gap: .5rem 1.5rem; align-items: center; }
header.top a { color: #fff; text-decoration: none; }
header.top .brand { font-weight: 700; letter-spacing: .02em; }
header.top .who { margin-left: auto; display: flex; gap: .75rem; align-items: center; font-size: .9rem; }
header.top form { margin: 0; }
header.top button { background: transparent; color: #fff; border: 1px solid #6b7686; }
nav.sections { background: #fff; border-bottom: 1px solid var(--line); padding: 0 1rem; display: flex; flex-wrap: wrap; gap: 0 1rem; }
nav.sections a { display: inline-block; padding: .55rem 0; text-decoration: none; color: var(--muted); border-bottom: 2px solid transparent; }
nav.sections a[aria-current="page"] { color: var(--ink); border-bottom-color: var(--accent); font-weight: 600; }
main { max-width: 72rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.4rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 .5rem; }
section.card, div.card { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 1rem; margin: 0 0 1rem; }
.table-wrap { overflow-x: auto; background: var(--card); border: 1px solid var(--line); border-radius: 6px; margin: 0 0 1rem; }
table { border-collapse: collapse; width: 100%; font-size: .92rem; }
th, td { text-align: left; padding: .45rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #eef1f5; font-weight: 600; white-space: nowrap; }
tr:last-child td { border-bottom: none; }
time { white-space: nowrap; }
td select { width: auto; min-width: 6.5rem; }
td.mono { overflow-wrap: anywhere; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .88rem; }
pre { background: #eef1f5; padding: .75rem; border-radius: 4px; overflow-x: auto; white-space: pre-wrap; word-break: break-word; }
main > pre { white-space: pre; word-break: normal; }
.empty { color: var(--muted); padding: 1rem; text-align: center; }
.muted { color: var(--muted); }
.notice { border-left: 4px solid var(--ok); background: #eaf6ee; padding: .6rem .8rem; margin: 0 0 1rem; }
.error { border-left: 4px solid var(--danger); background: #fbeceb; padding: .6rem .8rem; margin: 0 0 1rem; }
.warning { border-left: 4px solid var(--warn); background: #fdf4e3; padding: .6rem .8rem; margin: 0 0 1rem; }
.secret { font-family: ui-monospace, Menlo, Consolas, monospace; background: #fff; border: 1px dashed var(--warn); padding: .5rem; word-break: break-all; }
.stats { display: grid; grid-template-columns: repeat(auto-fit, minmax(14rem, 1fr)); gap: 1rem; }
.badge { display: inline-block; padding: 0 .45rem; border-radius: 999px; font-size: .8rem; color: var(--ink); background: #eef1f5; border: 1px solid var(--line); }
.badge.ok { background: #eaf6ee; border-color: #b9dfc5; }
.badge.bad { background: #fbeceb; border-color: #efbdb9; }
form.inline { display: inline; margin: 0; }
form.stack { display: grid; gap: .6rem; max-width: 36rem; }
form.filters { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: end; margin: 0 0 1rem; }
label { display: grid; gap: .2rem; font-size: .9rem; }
label.check { display: flex; gap: .4rem; align-items: center; }
input, select, textarea, button { font: inherit; }
input[type="text"], input[type="url"], input[type="datetime-local"], input[type="password"], input[type="email"], select, textarea { padding: .35rem .5rem; border: 1px solid #aab3bf; border-radius: 4px; background: #fff; min-width: 0; width: 100%; }
button { padding: .35rem .8rem; border-radius: 4px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { background: #fff; color: var(--accent); }
button.danger { background: var(--danger); border-color: var(--danger); }
.tree li { margin: .2rem 0; }
dl.fields { display: grid; grid-template-columns: minmax(8rem, 14rem) 1fr; gap: .3rem 1rem; margin: 0; }
dl.fields dt { font-weight: 600; color: var(--muted); }
dl.fields dd { margin: 0; word-break: break-word; }
.pager { display: flex; gap: 1rem; margin: .5rem 0 1rem; }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
:focus-visible { outline: 3px solid #f0b429; outline-offset: 2px; }
@media (max-width: 600px) {
  html { font-size: 14px; }
  main { padding: .75rem; }
  dl.fields { grid-template-columns: 1fr; }
  header.top .who { margin-left: 0; width: 100%; }
}
`;

const JS = `
(function () {
  var fmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
  document.querySelectorAll('time[datetime]').forEach(function (t) {
    var d = new Date(t.getAttribute('datetime'));
    if (!isNaN(d.getTime())) { t.title = t.getAttribute('datetime'); t.textContent = fmt.format(d); }
  });
  document.querySelectorAll('form[data-confirm]').forEach(function (f) {
    f.addEventListener('submit', function (e) { if (!window.confirm(f.getAttribute('data-confirm'))) e.preventDefault(); });
  });
})();
`;

/** The hub's icon: browsers ask for /favicon.ico on every page otherwise (a 404 in their console). */
const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1d2430"/><path d="M9 20c2 2 4 3 7 3 3 0 5-1.5 5-4s-2-3.5-5-4-5-1.5-5-4 2-4 5-4c2.5 0 4.5 1 6 2.5" fill="none" stroke="#f0b429" stroke-width="3" stroke-linecap="round"/></svg>`;

interface Asset {
  body: string;
  type: string;
  etag: string;
}

const asset = (body: string, type: string): Asset => ({
  body,
  type,
  etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"`,
});
const ASSETS: Record<string, Asset> = {
  '/assets/svc.css': asset(CSS, 'text/css; charset=utf-8'),
  '/assets/svc.js': asset(JS, 'text/javascript; charset=utf-8'),
  '/assets/svc.svg': asset(ICON, 'image/svg+xml'),
  '/favicon.ico': asset(ICON, 'image/svg+xml'),
};

export function registerAssetRoutes(router: Router): void {
  for (const [path, a] of Object.entries(ASSETS)) {
    router.get(path, (ctx) => {
      ctx.set('cache-control', 'public, max-age=3600');
      ctx.set('x-content-type-options', 'nosniff');
      ctx.etag = a.etag;
      if (ctx.fresh) {
        ctx.status = 304;
        return;
      }
      ctx.type = a.type;
      ctx.body = a.body;
    });
  }
}
