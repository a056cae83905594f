// contextd trail viewer: vanilla JS over the read-only /api/v1 (docs/trail-ui.md). No framework,
// nothing loaded from elsewhere. Every text from the trail goes into the page as text nodes.
'use strict';

const PAGE = 100;                 // events fetched per page of a scope
const TOKEN_KEY = 'contextd.token';
const $ = (sel) => document.querySelector(sel);

// ---- DOM helpers.
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
const svgNs = 'http://www.w3.org/2000/svg';
function s(tag, attrs) {
  const el = document.createElementNS(svgNs, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  return el;
}
const fmt = (n) => Number(n || 0).toLocaleString('en-US');
const when = (ms) => (ms ? new Date(ms).toISOString().replace('T', ' ').slice(0, 19) : '');
function badge(text, cls) { return h('span', { class: `badge ${cls || text}` }, text); }

// ---- Auth: a token from the URL fragment (#token=...), kept for this tab only, or the form.
function takeTokenFromFragment() {
  const m = location.hash.match(/(?:^#|&)token=([^&]+)/);
  if (m) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
    history.replaceState(null, '', location.pathname + location.search);
  }
}
function authHeaders() {
  const t = sessionStorage.getItem(TOKEN_KEY);
  return t ? { Authorization: `Bearer ${t}` } : {};
}
class AuthError extends Error {}

async function api(path) {
  const res = await fetch(`/api/v1/${path}`, { headers: authHeaders(), cache: 'no-store' });
  if (res.status === 401) { showTokenForm(); throw new AuthError('unauthorized'); }
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body.error || body?.error?.message || `HTTP ${res.status}`);
  return body;
}

function showTokenForm() {
  const form = $('#token-form');
  if (!form.hidden) return;
  form.hidden = false;
  $('#token-error').textContent = sessionStorage.getItem(TOKEN_KEY) ? 'The token was refused.' : '';
  $('#token-input').focus();
}

function showError(err) {
  if (err instanceof AuthError) return;
  const el = $('#error');
  el.textContent = String(err.message || err);
  el.hidden = false;
}
function clearError() { $('#error').hidden = true; }

// ---- Routing: ?session=<root>[&scope=<id>] or the sessions list.
function go(params) {
  const q = new URLSearchParams(params).toString();
  history.pushState(null, '', q ? `/ui/?${q}` : '/ui/');
  route();
}

let live = null;  // the open stream's AbortController

function route() {
  clearError();
  stopLive();
  const p = new URLSearchParams(location.search);
  const root = p.get('session');
  $('#sessions-view').hidden = !!root;
  $('#conversations-view').hidden = true;  // shown by loadSessions when there are some
  $('#session-view').hidden = !root;
  if (root) openSession(root, p.get('scope')).catch(showError);
  else loadSessions().catch(showError);
}

// ---- Sessions list and chart.
async function loadSessions() {
  const [list, stats] = await Promise.all([api('sessions'), api('stats')]);
  const tbody = $('#sessions tbody');
  tbody.replaceChildren(...list.sessions.map((x) => {
    const link = h('a', { href: `/ui/?session=${encodeURIComponent(x.root_id)}`, class: 'session-link',
      onclick: (e) => { e.preventDefault(); go({ session: x.root_id }); } },
      x.kind === 'model' ? `model ${x.session_id.slice(6)}` : x.session_id || x.root_id);
    return h('tr', { class: 'session-row', 'data-root-id': x.root_id },
      h('td', {}, when(x.created_at_ms)), h('td', {}, `${x.tenant} / ${x.project}`), h('td', {}, link),
      h('td', { class: 'num' }, fmt(x.branches)), h('td', { class: 'num' }, fmt(x.tokens_unfolded)),
      h('td', { class: 'num' }, fmt(x.tokens_folded)), h('td', { class: 'num' }, fmt(x.tokens_saved)),
      h('td', {}, badge(x.status)));
  }));
  if (!list.sessions.length) tbody.append(h('tr', {}, h('td', { colspan: 8 }, 'No sessions recorded yet.')));
  drawChart(stats);
  await loadConversations(list.sessions).catch(showError);
}

// ---- The model gateway's conversations: folds made and skipped (GET /api/v1/conversations).
async function loadConversations(sessions) {
  const data = await api('conversations');
  const section = $('#conversations-view');
  section.hidden = !data.conversations || !data.conversations.length;
  if (section.hidden) return;
  // A conversation's trail session, when the trail has it ("model:<conversation>").
  const roots = new Map(sessions.filter((x) => x.kind === 'model').map((x) => [x.session_id.slice(6), x.root_id]));
  $('#conversations tbody').replaceChildren(...data.conversations.map((c) => {
    const root = roots.get(c.conversation);
    const name = root
      ? h('a', { href: `/ui/?session=${encodeURIComponent(root)}`, onclick: (e) => { e.preventDefault(); go({ session: root }); } }, c.conversation)
      : c.conversation;
    const reasons = Object.entries(c.folds_skipped_by_reason || {})
      .map(([reason, n]) => badge(`${reason} ${fmt(n)}`, 'skip'));
    return h('tr', { class: 'conversation-row', 'data-conversation': c.conversation },
      h('td', {}, when(c.last_at_ms)), h('td', {}, c.project), h('td', { class: 'conversation' }, name),
      h('td', { class: 'num' }, fmt(c.requests)), h('td', { class: 'num folds-made' }, fmt(c.folds_made)),
      h('td', { class: 'num folds-skipped' }, fmt(c.folds_skipped)),
      h('td', { class: 'skip-reasons' }, reasons.length ? reasons : 'none'),
      h('td', { class: 'num branch-views' },
        c.isolated_requests ? `${fmt(c.isolated_requests)} (${fmt(c.view_tokens_spared)} spared)` : '0'),
      h('td', { class: 'num' }, `${fmt(c.tokens_after)} of ${fmt(c.tokens_before)}`),
      h('td', { class: 'num' }, fmt(c.tokens_saved)));
  }));
}

function bars(title, items, cls) {
  const w = 600, ht = 100;
  const svg = s('svg', { viewBox: `0 0 ${w} ${ht}`, preserveAspectRatio: 'none', role: 'img',
    'aria-label': `${title}: ${items.map((i) => `${i.label} ${i.value}`).join(', ')}` });
  const max = Math.max(1, ...items.map((i) => i.value));
  const bw = w / Math.max(items.length, 12);  // a lone bar stays a bar, not the whole width
  items.forEach((it, i) => {
    const bh = Math.max(1, (Math.max(0, it.value) / max) * (ht - 4));
    const r = s('rect', { x: i * bw + 1, y: ht - bh, width: Math.max(1, bw - 2), height: bh, class: cls });
    const t = s('title', {}); t.textContent = `${it.label}: ${fmt(it.value)} tokens saved`;
    r.append(t); svg.append(r);
  });
  return h('div', { class: 'chart' }, h('h3', {}, title), svg);
}

function drawChart(stats) {
  const sessions = stats.sessions.slice(0, 40).reverse()
    .map((x) => ({ label: x.session_id || x.root_id, value: x.tokens_saved }));
  const days = stats.days.slice(-30).map((d) => ({ label: d.day, value: d.tokens_saved }));
  $('#chart').replaceChildren(
    h('figcaption', {}, `Tokens saved: ${fmt(stats.tokens_saved)} of ${fmt(stats.tokens_unfolded)} unfolded`),
    bars('Per session (oldest to newest)', sessions, 'session'), bars('Per day', days, 'day'));
}

// ---- A session as a tree of scopes.
const view = { root: null, scopes: new Map(), nodes: new Map(), fingerprint: '' };

async function openSession(root, focusScope) {
  view.root = root; view.scopes = new Map(); view.nodes = new Map(); view.fingerprint = '';
  $('#tree').replaceChildren();
  $('#event-detail').replaceChildren(h('p', { class: 'hint' }, 'Select an event to see its payload.'));
  await refreshScopes();
  const target = focusScope && view.nodes.get(focusScope);
  if (target) {
    for (let id = focusScope; id; id = view.scopes.get(id)?.parent_id) await expand(id);
    target.li.querySelector('.scope-head').focus();
    target.li.scrollIntoView({ block: 'center' });
  }
  startLive(root);
}

function scopeTitle(sc) {
  if (sc.kind === 'session') return sc.session_id.startsWith('model:') ? `model conversation ${sc.session_id.slice(6)}` : `session ${sc.session_id}`;
  return `${sc.description || sc.id}`;
}

function budgetEl(b) {
  if (!b || !b.budget_allocated) return null;
  const pct = Math.min(100, Math.round((b.tokens_used * 100) / b.budget_allocated));
  const fill = h('span', { class: `fill${pct >= 100 ? ' full' : pct >= 80 ? ' high' : ''}` });
  fill.style.width = `${pct}%`;
  return h('span', { class: 'budget', title: `${b.tokens_used} of ${b.budget_allocated} tokens used` },
    h('span', { class: 'bar', role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': b.budget_allocated,
      'aria-valuenow': b.tokens_used, 'aria-label': 'budget used' }, fill),
    `${fmt(b.tokens_used)} / ${fmt(b.budget_allocated)}`);
}

function headContent(sc) {
  const b = sc.branch;
  const meta = [badge(sc.kind, 'kind'), badge(sc.status)];
  if (b) {
    meta.push(badge(b.status));
    if (b.forced) meta.push(badge(`forced: ${b.finish_reason || b.status}`, 'forced'));
    const bar = budgetEl(b); if (bar) meta.push(bar);
    if (b.deadline_ms) meta.push(h('span', { class: 'deadline' }, `deadline ${when(b.deadline_ms)}`));
  }
  meta.push(h('span', { class: 'count' }, `${fmt(sc.event_count)} events, ${fmt(sc.event_tokens)} tokens`));
  if (sc.status === 'folded') meta.push(h('span', {}, `folded to ${fmt(sc.summary_tokens)} tokens`));
  return [h('span', { class: 'chev', 'aria-hidden': 'true' }),
    h('span', { class: 'scope-title' }, h('strong', {}, scopeTitle(sc)), ' ', h('code', {}, sc.id)),
    h('span', { class: 'scope-meta' }, meta)];
}

function makeNode(sc) {
  const head = h('button', { class: 'scope-head', type: 'button', 'aria-controls': `body-${sc.id}`,
    onclick: () => toggle(sc.id), onkeydown: (e) => treeKey(e, sc.id) });
  const summary = h('p', { class: 'summary' });
  const events = h('ol', { class: 'events', 'aria-label': `events of ${sc.id}` });
  const more = h('button', { class: 'more', type: 'button', hidden: true, onclick: () => loadEvents(sc.id) }, 'Load more events');
  const children = h('ul', { role: 'group' });
  const body = h('div', { class: 'body', id: `body-${sc.id}`, hidden: true }, events, more, children);
  const li = h('li', { class: 'scope', role: 'treeitem', 'data-scope-id': sc.id, 'data-kind': sc.kind,
    'aria-expanded': 'false' }, head, summary, body);
  const node = { li, head, summary, events, more, children, body, loaded: 0, total: 0, expanded: false, loading: null };
  view.nodes.set(sc.id, node);
  return node;
}

function renderHead(sc) {
  const node = view.nodes.get(sc.id);
  node.head.replaceChildren(...headContent(sc));
  node.li.dataset.status = sc.status;
  node.summary.hidden = !sc.summary;
  node.summary.textContent = sc.summary ? `Summary: ${sc.summary}` : '';
}

async function refreshScopes() {
  const data = await api(`sessions/${encodeURIComponent(view.root)}/scopes`);
  view.fingerprint = data.fingerprint;
  $('#session-title').textContent = scopeTitle(data.scopes[0]);
  $('#session-totals').textContent = `${fmt(data.tokens_unfolded)} tokens unfolded, ${fmt(data.tokens_folded)} folded: ` +
    `${fmt(data.tokens_saved)} saved · project ${data.project} · ${data.scopes.length} scopes`;
  for (const sc of data.scopes) {
    const before = view.scopes.get(sc.id);
    view.scopes.set(sc.id, sc);
    let node = view.nodes.get(sc.id);
    if (!node) {
      node = makeNode(sc);
      const parent = sc.parent_id && view.nodes.get(sc.parent_id);
      (parent ? parent.children : $('#tree')).append(node.li);
      // The root is open at first, the rest folded: unfold them in place.
      if (!sc.parent_id) await expand(sc.id);
    }
    renderHead(sc);
    if (before && node.expanded && sc.event_count > node.total) {
      node.total = sc.event_count;
      // Follows a live session: new events are appended below what is shown (no shift above).
      if (node.loaded >= (before.event_count || 0)) await loadEvents(sc.id);
      else node.more.hidden = false;
    }
  }
}

async function expand(id) {
  const node = view.nodes.get(id);
  if (!node || node.expanded) return;
  node.expanded = true;
  node.li.setAttribute('aria-expanded', 'true');
  node.body.hidden = false;
  if (node.loaded === 0) await loadEvents(id);
}
function collapse(id) {
  const node = view.nodes.get(id);
  if (!node || !node.expanded) return;
  node.expanded = false;
  node.li.setAttribute('aria-expanded', 'false');
  node.body.hidden = true;
}
function toggle(id) {
  const node = view.nodes.get(id);
  if (node.expanded) collapse(id); else expand(id).catch(showError);
}

function loadEvents(id) {
  const node = view.nodes.get(id);
  if (node.loading) return node.loading.then(() => (node.loaded < node.total ? loadEvents(id) : null));
  node.loading = (async () => {
    const page = await api(`scopes/${encodeURIComponent(id)}/events?offset=${node.loaded}&limit=${PAGE}`);
    node.total = page.total;
    const frag = document.createDocumentFragment();
    for (const e of page.events) frag.append(eventRow(id, e));
    node.events.append(frag);
    node.loaded += page.events.length;
    node.more.hidden = page.next_offset === null;
    if (!node.more.hidden) node.more.textContent = `Load more events (${fmt(node.total - node.loaded)} left)`;
  })().finally(() => { node.loading = null; });
  return node.loading;
}

function eventRow(scopeId, e) {
  const child = e.kind === 'branch_created' || e.kind === 'auto_scope_opened' ? e.label : null;
  const label = e.label || e.payload.slice(0, 80);
  return h('li', {}, h('button', { class: `event${e.is_error ? ' err' : ''}`, type: 'button', 'data-seq': e.seq,
    onclick: (ev) => { showEvent(scopeId, e.seq, ev.currentTarget).catch(showError); if (child && view.nodes.get(child)) expand(child).catch(showError); } },
  h('span', { class: 'seq' }, `#${e.seq}`), h('span', { class: 'kind' }, e.kind),
  h('span', { class: 'lbl' }, label),
  h('span', { class: 'tok' }, `${fmt(e.tokens)} tok`, e.redactions ? h('span', { class: 'red' }, ` · ${e.redactions} redacted`) : '')));
}

// Text with every [REDACTED:rule:prefix] marker in a <mark>.
function highlighted(text) {
  const out = [];
  const re = /\[REDACTED:[^\]\n]*\]/g;
  let last = 0, m;
  while ((m = re.exec(text))) {
    out.push(text.slice(last, m.index));
    out.push(h('mark', { class: 'redaction', title: 'redacted by the scrubber' }, m[0]));
    last = m.index + m[0].length;
  }
  out.push(text.slice(last));
  return out;
}

async function showEvent(scopeId, seq, button) {
  document.querySelectorAll('.event[aria-current="true"]').forEach((b) => b.removeAttribute('aria-current'));
  if (button) button.setAttribute('aria-current', 'true');
  const { event: e } = await api(`scopes/${encodeURIComponent(scopeId)}/events/${seq}`);
  const aside = $('#event-detail');
  aside.replaceChildren(
    h('h3', {}, `#${e.seq} ${e.kind}${e.label ? ` · ${e.label}` : ''}`),
    h('dl', {}, h('dt', {}, 'scope'), h('dd', {}, e.scope_id), h('dt', {}, 'time'), h('dd', {}, when(e.at_ms)),
      h('dt', {}, 'tokens'), h('dd', {}, fmt(e.tokens)), h('dt', {}, 'error'), h('dd', {}, e.is_error ? 'yes' : 'no'),
      h('dt', {}, 'redactions'), h('dd', { class: 'redactions' }, e.redaction_rules.length ? e.redaction_rules.join(', ') : 'none'),
      h('dt', {}, 'sha256'), h('dd', {}, h('code', {}, e.sha256))),
    h('pre', { class: 'payload' }, highlighted(e.payload)));
  if (window.matchMedia('(max-width: 900px)').matches) aside.scrollIntoView({ block: 'start' });
}

// Arrow keys move between scope headers, left/right fold and unfold (a tree's keys).
function treeKey(e, id) {
  const heads = [...document.querySelectorAll('#tree .scope-head')].filter((b) => b.offsetParent !== null);
  const i = heads.indexOf(e.currentTarget);
  if (e.key === 'ArrowDown' && heads[i + 1]) { heads[i + 1].focus(); e.preventDefault(); }
  else if (e.key === 'ArrowUp' && heads[i - 1]) { heads[i - 1].focus(); e.preventDefault(); }
  else if (e.key === 'ArrowRight') { expand(id).catch(showError); e.preventDefault(); }
  else if (e.key === 'ArrowLeft') { collapse(id); e.preventDefault(); }
}

// ---- Live updates: Server-Sent Events read with fetch (EventSource cannot send the token).
function stopLive() {
  if (live) live.abort();
  live = null;
  setLive('');
}
function setLive(text) { const el = $('#live-status'); el.textContent = text; el.classList.toggle('on', text === 'live'); }

function startLive(root) {
  const ctrl = new AbortController();
  live = ctrl;
  (async () => {
    let delay = 1000;
    while (!ctrl.signal.aborted) {
      try {
        const res = await fetch(`/api/v1/sessions/${encodeURIComponent(root)}/stream`,
          { headers: { ...authHeaders(), Accept: 'text/event-stream' }, signal: ctrl.signal });
        if (res.status === 401) { showTokenForm(); return; }
        if (!res.ok) throw new Error(`stream: HTTP ${res.status}`);
        setLive('live');
        delay = 1000;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let cut;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, cut); buf = buf.slice(cut + 2);
            const ev = /^event: (.*)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (ev === 'update' && data && JSON.parse(data).fingerprint !== view.fingerprint) {
              await refreshScopes().catch(showError);
            }
          }
        }
      } catch (err) {
        if (ctrl.signal.aborted) return;
      }
      setLive('reconnecting');
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 15000);
    }
  })();
}

// ---- Search.
async function search(q) {
  const box = $('#search-results');
  box.hidden = false;
  box.replaceChildren(h('p', {}, 'Searching...'));
  const res = await api(`search?q=${encodeURIComponent(q)}`);
  const items = res.hits.map((hit) => h('li', { class: 'hit' },
    h('a', { href: `/ui/?session=${encodeURIComponent(hit.root_id)}&scope=${encodeURIComponent(hit.id)}`,
      onclick: (e) => { e.preventDefault(); box.hidden = true; go({ session: hit.root_id, scope: hit.id }); } },
    hit.description || hit.id), ' ', badge(hit.kind, 'kind'), ' ', badge(hit.status), ' ',
    h('span', { class: 'snippet' }, hit.snippet)));
  box.replaceChildren(h('h2', {}, `${res.hits.length} match(es) for “${res.query}”`),
    items.length ? h('ol', {}, items) : h('p', {}, 'Nothing matched.'));
  box.querySelector('a')?.focus();
}

// ---- Start.
function init() {
  takeTokenFromFragment();
  $('#search-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const q = $('#search-input').value.trim();
    if (q) search(q).catch(showError);
  });
  $('#token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('#token-input').value.trim());
    $('#token-form').hidden = true;
    route();
  });
  $('#home-link').addEventListener('click', (e) => { e.preventDefault(); go({}); });
  document.addEventListener('keydown', (e) => {
    if (e.key === '/' && !/INPUT|TEXTAREA/.test(document.activeElement.tagName)) { e.preventDefault(); $('#search-input').focus(); }
  });
  window.addEventListener('popstate', route);
  route();
}
init();
