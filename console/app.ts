/**
 * The read-only session console (docs/console.md): hash routes over the API's GET answers. It sends
 * only GET and HEAD, keeps the bearer token in sessionStorage only (never in a URL, a log line or
 * an error), decodes only the token's `exp`, and sets sizes through the CSSOM (the page's CSP has
 * no inline styles and no eval).
 */
import { encodeUrlId } from '../lib/protocol/url-ids.js';

const TOKEN_KEY = 'agent-state-console-token';
const ROW_PX = 28;
const LIST_PAGE = 200;
const SESSION_PAGE = 50;

const main = document.getElementById('main') as HTMLElement;
const crumbs = document.getElementById('crumbs') as HTMLOListElement;
const expiry = document.getElementById('expiry') as HTMLElement;
const forget = document.getElementById('forget') as HTMLButtonElement;

// ---- small DOM helpers ----

type Child = Node | string | null | undefined | false;
function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Record<string, string | boolean | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === false) continue;
    if (name === 'text') el.textContent = String(value);
    else el.setAttribute(name, value === true ? '' : value);
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}
const link = (href: string, text: string) => h('a', { href }, text);
const when = (iso: string) => new Date(iso).toLocaleString();
const bytes = (n: number) =>
  n < 1024 ? `${n} B` : n < 1024 ** 2 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 ** 2).toFixed(1)} MiB`;

// ---- the token ----

function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}
/** The token's `exp` (seconds), decoded without verification; undefined when it has none. */
function expOf(t: string): number | undefined {
  try {
    const part = t.split('.')[1] ?? '';
    const json = atob(
      part
        .replace(/-/g, '+')
        .replace(/_/g, '/')
        .padEnd(Math.ceil(part.length / 4) * 4, '='),
    );
    const exp = (JSON.parse(json) as { exp?: unknown }).exp;
    return typeof exp === 'number' ? exp : undefined;
  } catch {
    return undefined;
  }
}
let ticker: number | undefined;
function showExpiry(): void {
  const t = token();
  forget.hidden = !t;
  const exp = t ? expOf(t) : undefined;
  if (!t) expiry.textContent = '';
  else if (exp === undefined) expiry.textContent = 'token without expiry';
  else {
    const left = Math.round(exp - Date.now() / 1000);
    expiry.textContent =
      left > 0
        ? `token runs out in ${duration(left)} (${new Date(exp * 1000).toLocaleTimeString()})`
        : 'token has run out';
  }
}
function duration(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}
forget.addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  void route();
});

/** Asks for a token (once per tab: sessionStorage), then shows the view again. */
function askToken(reason: string): void {
  sessionStorage.removeItem(TOKEN_KEY);
  showExpiry();
  setCrumbs([]);
  const input = h('input', {
    id: 'token',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-describedby': 'token-note',
  });
  const form = h(
    'form',
    { 'aria-labelledby': 'token-title' },
    h('h1', { id: 'token-title', text: 'Sign in with a bearer token' }),
    h('p', { id: 'token-note', class: 'note', text: reason }),
    h('label', { for: 'token', text: 'Bearer token' }),
    h('div', { class: 'row' }, input, h('button', { type: 'submit', text: 'Use token' })),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const value = input.value.trim().replace(/^Bearer\s+/i, '');
    if (!value) return;
    sessionStorage.setItem(TOKEN_KEY, value);
    input.value = '';
    void route();
  });
  main.replaceChildren(form);
  input.focus();
}

// ---- the API ----

class Shown extends Error {}
/** Answers the console understands; anything else becomes a message (never with the token). */
interface Got {
  status: number;
  headers: Headers;
  body: unknown;
}
let generation = 0;
async function get(path: string, what: string, method: 'GET' | 'HEAD' = 'GET'): Promise<Got> {
  const t = token();
  if (!t) {
    askToken('The console needs a bearer token for this API. It is kept in this tab only.');
    throw new Shown();
  }
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers: { authorization: `Bearer ${t}`, accept: 'application/json' },
      cache: 'no-store',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    });
  } catch {
    showError(`The API could not be reached while reading ${what}.`, true);
    throw new Shown();
  }
  if (response.status === 401) {
    askToken('The token was refused or has run out: paste a new one.');
    throw new Shown();
  }
  const body =
    method === 'HEAD' || response.status === 304 ? undefined : await response.json().catch(() => undefined);
  return { status: response.status, headers: response.headers, body };
}
/** A GET that must answer 200 (or 202 restoring, shown as such). */
async function getOk<T>(path: string, what: string): Promise<T> {
  const got = await get(path, what);
  if (got.status === 200) return got.body as T;
  if (got.status === 404) showError(`Not found: ${what}.`, false);
  else if (got.status === 202)
    showError(`${what} is being restored from its archive tier; try again later.`, true);
  else {
    const detail = (got.body as { detail?: string } | undefined)?.detail;
    showError(`The API answered ${got.status} for ${what}${detail ? `: ${detail}` : ''}.`, got.status >= 500);
  }
  throw new Shown();
}
function showError(message: string, retry: boolean): void {
  const box = h('div', { class: 'error', role: 'alert' }, h('p', { text: message }));
  if (retry) {
    const again = h('button', { type: 'button', text: 'Retry' });
    again.addEventListener('click', () => void route());
    box.append(again);
  }
  main.replaceChildren(box);
}

const sessionPath = (sid: string) => `/v1/sessions/${encodeUrlId(sid)}`;
const hashOf = (...parts: string[]) => `#/${parts.map(encodeURIComponent).join('/')}`;

// ---- routing ----

function setCrumbs(parts: Array<[string, string]>): void {
  crumbs.replaceChildren(
    ...parts.map(([text, href], i) =>
      h('li', {}, i === parts.length - 1 ? h('span', { 'aria-current': 'page', text }) : link(href, text)),
    ),
  );
}

async function route(): Promise<void> {
  const mine = ++generation;
  if (ticker !== undefined) clearInterval(ticker);
  ticker = undefined;
  showExpiry();
  if (!token())
    return askToken('The console needs a bearer token for this API. It is kept in this tab only.');
  const parts = (location.hash.replace(/^#\/?/, '').split('?')[0] ?? '')
    .split('/')
    .filter(Boolean)
    .map(decodeURIComponent);
  try {
    if (parts[0] !== 'sessions' || parts.length === 1) await sessionsView(mine);
    else {
      const sid = parts[1] as string;
      const base: Array<[string, string]> = [
        ['Sessions', '#/sessions'],
        [sid, hashOf('sessions', sid)],
      ];
      if (parts.length === 2) await sessionView(sid, base);
      else if (parts[2] === 'values' && parts[3] !== undefined) await valueView(sid, parts[3], base);
      else if (parts[2] === 'lists' && parts[3] !== undefined && parts[4] === 'archives' && parts[5])
        await listView(sid, parts[3], base, parts[5]);
      else if (parts[2] === 'lists' && parts[3] !== undefined) await listView(sid, parts[3], base);
      else if (parts[2] === 'workspaces' && parts[3] !== undefined) await workspaceView(sid, parts[3], base);
      else showError('This console has no such page.', false);
    }
  } catch (error) {
    if (!(error instanceof Shown)) showError('The console failed to show this page.', true);
  }
  if (mine === generation) main.focus({ preventScroll: true });
}

// ---- sessions ----

async function sessionsView(mine: number): Promise<void> {
  setCrumbs([['Sessions', '#/sessions']]);
  const loaded: Array<{ sessionId: string; lastActivity: string }> = [];
  let cursor: string | null | undefined;
  let sortBy: 'id' | 'activity' = 'activity';
  const filter = h('input', { id: 'prefix', type: 'search', autocomplete: 'off' });
  const sort = h(
    'select',
    { id: 'sort' },
    h('option', { value: 'activity', text: 'last activity, newest first' }),
    h('option', { value: 'id', text: 'session id' }),
  );
  const count = h('p', { id: 'loaded', class: 'note', role: 'status', 'aria-live': 'polite' });
  const body = h('tbody');
  const table = h(
    'table',
    { 'aria-labelledby': 'sessions-title' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col', text: 'Session' }),
        h('th', { scope: 'col', text: 'Last activity' }),
      ),
    ),
    body,
  );
  const sentinel = h('div', { class: 'sentinel', 'aria-hidden': 'true' });
  const more = h('button', { type: 'button', id: 'more', text: 'Load more sessions' });
  main.replaceChildren(
    h('h1', { id: 'sessions-title', text: 'Sessions' }),
    h(
      'div',
      { class: 'row' },
      h('div', {}, h('label', { for: 'prefix', text: 'Filter by id prefix' }), filter),
      h('div', {}, h('label', { for: 'sort', text: 'Sort by' }), sort),
    ),
    count,
    table,
    sentinel,
    more,
  );
  const draw = () => {
    const prefix = filter.value;
    const shown = loaded.filter((s) => s.sessionId.startsWith(prefix));
    shown.sort((a, b) =>
      sortBy === 'id' ? a.sessionId.localeCompare(b.sessionId) : b.lastActivity.localeCompare(a.lastActivity),
    );
    body.replaceChildren(
      ...shown.map((s) =>
        h(
          'tr',
          {},
          h('td', {}, link(hashOf('sessions', s.sessionId), s.sessionId)),
          h('td', { text: when(s.lastActivity) }),
        ),
      ),
    );
    const atLeast = loaded.length + (cursor ? 1 : 0);
    count.textContent = `${prefix ? `${shown.length} match; ` : ''}${loaded.length} of ${cursor ? 'at least ' : ''}${atLeast} loaded`;
    more.hidden = !cursor;
  };
  let busy = false;
  const load = async () => {
    if (busy || cursor === null || mine !== generation) return;
    busy = true;
    const query = `limit=${SESSION_PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const page = await getOk<{ sessions: typeof loaded; nextCursor: string | null }>(
      `/v1/sessions?${query}`,
      'the sessions',
    );
    loaded.push(...page.sessions);
    cursor = page.nextCursor;
    busy = false;
    draw();
  };
  filter.addEventListener('input', draw);
  sort.addEventListener('change', () => {
    sortBy = sort.value === 'id' ? 'id' : 'activity';
    draw();
  });
  more.addEventListener('click', () => void load().catch(() => {}));
  new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting) && cursor) void load().catch(() => {});
  }).observe(sentinel);
  await load();
}

// ---- one session ----

interface KeyPage {
  values: Array<{ key: string; etag: string; size: number; lastModified: string }>;
  lists: Array<{ key: string; count: number; hash: string; lastModified: string }>;
  nextCursor?: string;
}
interface Workspace {
  name: string;
  size: number;
  storageClass: string;
  lastModified: string;
  contentEncoding?: string;
}

async function sessionView(sid: string, base: Array<[string, string]>): Promise<void> {
  setCrumbs(base);
  const path = sessionPath(sid);
  const exists = await get(path, `session ${sid}`, 'HEAD');
  if (exists.status === 404) return showError(`Not found: session ${sid} (it has no data).`, false);
  const keys: KeyPage = { values: [], lists: [] };
  let cursor: string | undefined;
  do {
    const page = await getOk<KeyPage>(
      `${path}/keys${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`,
      `the keys of session ${sid}`,
    );
    keys.values.push(...page.values);
    keys.lists.push(...page.lists);
    cursor = page.nextCursor;
  } while (cursor);
  const { workspaces } = await getOk<{ workspaces: Workspace[] }>(
    `${path}/workspaces`,
    `the workspaces of session ${sid}`,
  );
  const lock = await get(`${path}/lock`, `the lock of session ${sid}`);
  const times = [...keys.values, ...keys.lists, ...workspaces].map((k) => k.lastModified).sort();
  const last = times[times.length - 1];

  const lease = h(
    'section',
    { 'aria-labelledby': 'lease-title' },
    h('h2', { id: 'lease-title', text: 'Lease' }),
  );
  if (lock.status === 200) {
    const held = lock.body as { owner: string; expiresAt: string; token: number };
    const left = h('span', { id: 'lease-left' });
    const tick = () => {
      const ms = Date.parse(held.expiresAt) - Date.now();
      left.textContent = ms > 0 ? `${duration(Math.ceil(ms / 1000))} left` : 'expired';
    };
    tick();
    ticker = window.setInterval(tick, 1000);
    lease.append(
      h(
        'dl',
        { class: 'facts', id: 'lease' },
        h('dt', { text: 'Holder' }),
        h('dd', { class: 'mono', id: 'lease-owner', text: held.owner }),
        h('dt', { text: 'Expires' }),
        h('dd', {}, h('time', { datetime: held.expiresAt, text: when(held.expiresAt) }), ' — ', left),
        h('dt', { text: 'Fencing token' }),
        h('dd', { class: 'mono', id: 'lease-token', text: String(held.token) }),
      ),
    );
  } else lease.append(h('p', { id: 'lease', text: 'No lease holds the lock of this session.' }));

  const valueRows = keys.values.map((v) =>
    h(
      'tr',
      {},
      h('td', {}, link(hashOf('sessions', sid, 'values', v.key), v.key)),
      h('td', { text: bytes(v.size) }),
      h('td', { class: 'mono', text: v.etag }),
      h('td', { text: when(v.lastModified) }),
    ),
  );
  const listRows = keys.lists.map((l) =>
    h(
      'tr',
      {},
      h('td', {}, link(hashOf('sessions', sid, 'lists', l.key), l.key)),
      h('td', { text: l.count.toLocaleString('en') }),
      h('td', { class: 'mono', text: l.hash.slice(0, 16) }),
      h('td', { text: when(l.lastModified) }),
    ),
  );
  const wsRows = workspaces.map((w) =>
    h(
      'tr',
      {},
      h('td', {}, link(hashOf('sessions', sid, 'workspaces', w.name), w.name)),
      h('td', { text: bytes(w.size) }),
      h('td', { text: w.storageClass }),
      h('td', { text: when(w.lastModified) }),
    ),
  );
  const table = (id: string, title: string, heads: string[], rows: HTMLElement[]) =>
    h(
      'section',
      { 'aria-labelledby': id },
      h('h2', { id, text: `${title} (${rows.length})` }),
      rows.length === 0
        ? h('p', { class: 'note', text: `No ${title.toLowerCase()}.` })
        : h(
            'table',
            { 'aria-labelledby': id },
            h('thead', {}, h('tr', {}, ...heads.map((t) => h('th', { scope: 'col', text: t })))),
            h('tbody', {}, ...rows),
          ),
    );
  main.replaceChildren(
    h('h1', { text: `Session ${sid}` }),
    h('p', {
      class: 'note',
      id: 'last-activity',
      text: last ? `Last activity ${when(last)}` : 'No activity',
    }),
    lease,
    table('values-title', 'Values', ['Key', 'Size', 'ETag', 'Modified'], valueRows),
    table('lists-title', 'Lists', ['Key', 'Items', 'Hash', 'Modified'], listRows),
    table('workspaces-title', 'Workspaces', ['Name', 'Size', 'Storage class', 'Modified'], wsRows),
  );
}

// ---- a value ----

function jsonView(value: unknown, label?: string, depth = 0): Node {
  const key = label === undefined ? null : h('span', { class: 'k', text: `${label}: ` });
  if (value === null || typeof value !== 'object') {
    const cls = typeof value === 'string' ? 's' : 'n';
    return h('div', {}, key, h('span', { class: cls, text: JSON.stringify(value) }));
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  const open = Array.isArray(value) ? '[' : '{';
  const details = h(
    'details',
    { open: depth < 2 },
    h('summary', {}, key, `${open} ${entries.length} ${Array.isArray(value) ? 'items' : 'keys'}`),
  );
  for (const [k, v] of entries) details.append(jsonView(v, k, depth + 1));
  return details;
}

async function valueView(sid: string, key: string, base: Array<[string, string]>): Promise<void> {
  setCrumbs([...base, [`value ${key}`, hashOf('sessions', sid, 'values', key)]]);
  const got = await get(`${sessionPath(sid)}/state/${encodeUrlId(key)}`, `value ${key} of session ${sid}`);
  if (got.status === 404) return showError(`Not found: value ${key} of session ${sid}.`, false);
  if (got.status === 202)
    return showError(`Value ${key} is being restored from its archive tier; try again later.`, true);
  if (got.status === 303)
    return showError(
      `Value ${key} is too large to show here (${bytes((got.body as { size: number }).size)}).`,
      false,
    );
  if (got.status !== 200) return showError(`The API answered ${got.status} for value ${key}.`, true);
  const etag = (got.headers.get('etag') ?? '').replace(/^"|"$/g, '');
  const copy = h('button', { type: 'button', id: 'copy', text: 'Copy as JSON' });
  const copied = h('span', { role: 'status', 'aria-live': 'polite' });
  copy.addEventListener('click', () => {
    navigator.clipboard.writeText(JSON.stringify(got.body, null, 2)).then(
      () => {
        copied.textContent = 'copied';
      },
      () => {
        copied.textContent = 'the browser refused the clipboard';
      },
    );
  });
  main.replaceChildren(
    h('h1', { text: `Value ${key}` }),
    h(
      'dl',
      { class: 'facts' },
      h('dt', { text: 'ETag' }),
      h('dd', { class: 'mono', id: 'etag', text: etag }),
    ),
    h('div', { class: 'row' }, copy, copied),
    h(
      'div',
      { class: 'json', id: 'json', role: 'group', 'aria-label': `JSON of value ${key}` },
      jsonView(got.body),
    ),
  );
}

// ---- a list or an archive: newest first, virtualised ----

interface Page {
  items: unknown[];
  count: number;
  hash: string;
  offset: number;
}
interface Archive {
  archiveId: string;
  count: number;
  hash: string;
  archivedAt: string;
  offset: number;
}

async function listView(
  sid: string,
  key: string,
  base: Array<[string, string]>,
  archiveId?: string,
): Promise<void> {
  const listHash = hashOf('sessions', sid, 'lists', key);
  const at = archiveId ? hashOf('sessions', sid, 'lists', key, 'archives', archiveId) : listHash;
  setCrumbs([
    ...base,
    [`list ${key}`, listHash],
    ...(archiveId ? ([[`archive ${archiveId}`, at]] as Array<[string, string]>) : []),
  ]);
  const path = `${sessionPath(sid)}/lists/${encodeUrlId(key)}${archiveId ? `/archives/${encodeUrlId(archiveId)}` : ''}`;
  const what = archiveId ? `archive ${archiveId} of list ${key}` : `list ${key} of session ${sid}`;
  // Loaded items by index; the newest ones first, with the list's count, and its archives beside.
  const items = new Map<number, unknown>();
  const keep = (p: Page) => {
    for (const [i, item] of p.items.entries()) items.set(p.offset + i, item);
  };
  const archivesPath = `${sessionPath(sid)}/lists/${encodeUrlId(key)}/archives`;
  const [first, all] = await Promise.all([
    getOk<Page>(`${path}?last=${LIST_PAGE}`, what),
    getOk<{ archives: Archive[] }>(archivesPath, `the archives of list ${key}`),
  ]);
  keep(first);
  const count = first.count;
  // Positions are the list's: an archive of a truncate starts at its offset.
  const origin = archiveId ? (all.archives.find((a) => a.archiveId === archiveId)?.offset ?? 0) : 0;
  const archives = archiveId ? [] : all.archives;
  const filter = h('input', { id: 'filter', type: 'search', autocomplete: 'off', 'aria-controls': 'items' });
  const status = h('p', { id: 'list-status', class: 'note', role: 'status', 'aria-live': 'polite' });
  const scroller = h('div', {
    class: 'scroller',
    id: 'items',
    role: 'listbox',
    tabindex: '0',
    'aria-label': `Items of ${what}, newest first`,
  });
  const spacer = h('div', { class: 'spacer' });
  scroller.append(spacer);
  const detail = h('section', { id: 'item', 'aria-labelledby': 'item-title' });
  const archiveList = archiveId
    ? null
    : h(
        'section',
        { 'aria-labelledby': 'archives-title' },
        h('h2', { id: 'archives-title', text: `Archives (${archives.length})` }),
        archives.length === 0
          ? h('p', { class: 'note', text: 'No archives.' })
          : h(
              'ul',
              { class: 'plain', id: 'archives' },
              ...archives.map((a) =>
                h(
                  'li',
                  {},
                  link(hashOf('sessions', sid, 'lists', key, 'archives', a.archiveId), a.archiveId),
                  ` — ${a.count.toLocaleString('en')} items from position ${a.offset}, archived ${when(a.archivedAt)}`,
                ),
              ),
            ),
      );
  main.replaceChildren(
    h('h1', { text: archiveId ? `Archive ${archiveId} of list ${key}` : `List ${key}` }),
    h(
      'dl',
      { class: 'facts' },
      h('dt', { text: 'Items' }),
      h('dd', { id: 'count', text: count.toLocaleString('en') }),
      h('dt', { text: 'Hash' }),
      h('dd', { class: 'mono', id: 'hash', text: first.hash }),
    ),
    h(
      'div',
      { class: 'row' },
      h('div', {}, h('label', { for: 'filter', text: 'Filter loaded items by text' }), filter),
    ),
    status,
    scroller,
    detail,
    ...(archiveList ? [archiveList] : []),
  );

  // The rows shown: every index (newest first) or, filtered, the matching loaded ones.
  let indices: number[] | null = null;
  const total = () => (indices ? indices.length : count);
  const indexAt = (row: number) => (indices ? (indices[row] as number) : count - 1 - row);
  let selected = 0;
  const loading = new Set<number>();
  const itemAt = (index: number) => items.get(index);
  const loaded = () => items.size;
  const load = (page: number) => {
    if (loading.has(page)) return;
    loading.add(page);
    getOk<Page>(`${path}?offset=${page * LIST_PAGE}&limit=${LIST_PAGE}`, what).then(
      (p) => {
        keep(p);
        draw();
      },
      () => loading.delete(page),
    );
  };
  const rows = new Map<number, HTMLElement>();
  const draw = () => {
    spacer.style.height = `${total() * ROW_PX}px`;
    const top = scroller.scrollTop;
    const height = scroller.clientHeight || 480;
    const from = Math.max(0, Math.floor(top / ROW_PX) - 10);
    const to = Math.min(total(), Math.ceil((top + height) / ROW_PX) + 10);
    for (const [row, el] of rows)
      if (row < from || row >= to) {
        el.remove();
        rows.delete(row);
      }
    for (let row = from; row < to; row++) {
      const index = indexAt(row);
      const item = itemAt(index);
      if (item === undefined) load(Math.floor(index / LIST_PAGE));
      let el = rows.get(row);
      if (!el) {
        el = h('div', { class: 'vrow', role: 'option', id: `row-${row}` });
        el.style.top = `${row * ROW_PX}px`;
        el.addEventListener('click', () => select(row));
        spacer.append(el);
        rows.set(row, el);
      }
      const text = item === undefined ? 'loading…' : JSON.stringify(item);
      el.replaceChildren(h('span', { class: 'pos', text: `#${origin + index}` }), h('span', { text }));
      el.setAttribute('aria-selected', String(row === selected));
      el.dataset.position = String(origin + index);
    }
    if (total() > 0) scroller.setAttribute('aria-activedescendant', `row-${selected}`);
    status.textContent = `${loaded().toLocaleString('en')} of ${count.toLocaleString('en')} items loaded${indices ? `; ${indices.length} match` : ''}`;
  };
  const select = (row: number) => {
    selected = Math.max(0, Math.min(total() - 1, row));
    const y = selected * ROW_PX;
    if (y < scroller.scrollTop) scroller.scrollTop = y;
    else if (y + ROW_PX > scroller.scrollTop + scroller.clientHeight)
      scroller.scrollTop = y + ROW_PX - scroller.clientHeight;
    draw();
    const index = indexAt(selected);
    const item = itemAt(index);
    const position = origin + index;
    detail.replaceChildren(
      h('h2', { id: 'item-title', text: `Item #${position}` }),
      h('p', {}, link(`${at}?item=${position}`, 'Link to this item')),
      item === undefined ? h('p', { text: 'loading…' }) : h('div', { class: 'json' }, jsonView(item)),
    );
  };
  scroller.addEventListener('scroll', () => requestAnimationFrame(draw), { passive: true });
  scroller.addEventListener('keydown', (e) => {
    const pageRows = Math.max(1, Math.floor(scroller.clientHeight / ROW_PX) - 1);
    const moves: Record<string, number> = {
      ArrowDown: selected + 1,
      ArrowUp: selected - 1,
      PageDown: selected + pageRows,
      PageUp: selected - pageRows,
      Home: 0,
      End: total() - 1,
    };
    const to = moves[e.key];
    if (to === undefined) return;
    e.preventDefault();
    select(to);
  });
  filter.addEventListener('input', () => {
    const text = filter.value.toLowerCase();
    if (!text) indices = null;
    else {
      indices = [];
      for (const index of [...items.keys()].sort((a, b) => b - a))
        if (JSON.stringify(items.get(index)).toLowerCase().includes(text)) indices.push(index);
    }
    scroller.scrollTop = 0;
    selected = 0;
    draw();
  });
  const asked = new URLSearchParams(location.hash.split('?')[1] ?? '').get('item');
  const wanted = asked === null ? Number.NaN : Number(asked);
  draw();
  if (Number.isSafeInteger(wanted) && wanted >= origin && wanted < origin + count) {
    select(count - 1 - (wanted - origin));
  }
}

// ---- a workspace ----

async function workspaceView(sid: string, name: string, base: Array<[string, string]>): Promise<void> {
  setCrumbs([...base, [`workspace ${name}`, hashOf('sessions', sid, 'workspaces', name)]]);
  const got = await get(`${sessionPath(sid)}/workspaces/${encodeUrlId(name)}`, `workspace ${name}`);
  if (got.status === 404) return showError(`Not found: workspace ${name} of session ${sid}.`, false);
  if (got.status !== 200 && got.status !== 202)
    return showError(`The API answered ${got.status} for workspace ${name}.`, true);
  const w = got.body as Workspace & { status?: string; detail?: string };
  // 200 ready (its presigned download is not shown), or 202 restoring from an archive tier.
  const restore =
    got.status === 202 ? `restoring: ${w.detail ?? 'a restore is in progress'}` : 'readable now';
  main.replaceChildren(
    h('h1', { text: `Workspace ${name}` }),
    h(
      'dl',
      { class: 'facts', id: 'workspace' },
      h('dt', { text: 'Size' }),
      h('dd', { id: 'ws-size', text: `${bytes(w.size)} (${w.size.toLocaleString('en')} bytes)` }),
      h('dt', { text: 'Storage class' }),
      h('dd', { id: 'ws-class', text: w.storageClass }),
      h('dt', { text: 'Restore state' }),
      h('dd', { id: 'ws-restore', text: restore }),
      h('dt', { text: 'Modified' }),
      h('dd', { text: when(w.lastModified) }),
      ...(w.contentEncoding ? [h('dt', { text: 'Encoding' }), h('dd', { text: w.contentEncoding })] : []),
    ),
  );
}

window.addEventListener('hashchange', () => void route());
window.addEventListener('storage', showExpiry);
void route();
