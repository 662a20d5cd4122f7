/**
 * The Strands Agents (TypeScript) adapter: the SDK's unified `Storage` of
 * `@strands-agents/sdk/storage` (raw bytes under `/`-separated keys) on a `SessionStore` (the typed
 * HTTP client, or the library store).
 *
 * A key `session/<id>/<rest>` (where the SDK's `SessionManager` writes everything, the `session/`
 * namespace it adds to a storage that is not namespaced yet) is the value `<rest>` of the store's
 * session `<id>`; any other key (the context offloader's `offloader/…`, a memory store's
 * `memory/…`) is the value named by the whole key in one shared store session, `~strands`, which is
 * never listed as a Strands session. So `read`, `write` and `delete` cost one call each, and a
 * `list` within one session (all `SessionManager` lists) one `listKeys` per 1,000 keys; a `list`
 * above a session (`''`, `session/`, `session/<id prefix>`) reads `listSessionIds` and one
 * `listKeys` per session. Keys are normalized as the SDK's shipped backends do (runs of `/`
 * collapsed, leading and trailing `/` dropped; empty keys and `..` segments refused); each part
 * must also fit the store's ids (a session id up to 180 bytes, a key up to 128).
 *
 * Values: bytes that are exactly the `JSON.stringify` text of a JSON value (what `SessionManager`
 * writes: snapshots, manifests) are stored as that value, readable as themselves through the API;
 * any other bytes (not UTF-8, other whitespace or number forms, a BOM) as `{"~bytes": "<base64>"}`,
 * and so is a JSON document that has that shape itself, so every read answers the bytes written.
 */
import type { Storage } from '@strands-agents/sdk/storage';
import { ValidationError } from '../contract/errors.js';
import { parseIJson } from '../contract/json.js';
import { LIMITS } from '../contract/limits.js';
import type { SessionStore } from '../contract/types.js';
import { mapLimited } from '../util/map-limited.js';
import { keyPages, sessionIds } from './pages.js';

/** Where the SDK's `SessionManager` keeps a session: `session/<sessionId>/…`. */
export const STRANDS_SESSIONS = 'session/';
/** The store session that holds the keys outside `session/<id>/`. */
export const STRANDS_SHARED_SESSION = '~strands';
/** The member of a stored value that carries bytes that are not a JSON document's text. */
export const STRANDS_BYTES = '~bytes';

/** The mark of a namespaced view (the SDK's `NAMESPACED`, a registered symbol): used as it is. */
const NAMESPACED = Symbol.for('strands.storage.namespaced');
/** Sessions read at once when a `list` spans several. */
const LIST_CONCURRENCY = 8;

/** A Strands `Storage` whose `namespace` is always there. */
export interface StrandsStorage extends Storage {
  namespace(prefix: string): StrandsStorage;
}

/** A Strands key's place in the store. */
interface Place {
  readonly sessionId: string;
  readonly key: string;
}

function isEnvelope(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === STRANDS_BYTES;
}

/**
 * The store value of `data`: its JSON value when `data` is exactly that value's text and I-JSON
 * (what the store accepts: no lone surrogate, no nesting past its depth), else the envelope.
 */
function valueOfBytes(data: Uint8Array): unknown {
  try {
    const value = parseIJson(data);
    const text = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8');
    if (JSON.stringify(value) === text && !isEnvelope(value)) return value;
  } catch {
    // Not UTF-8, not JSON, or not I-JSON: stored as bytes.
  }
  return { [STRANDS_BYTES]: Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64') };
}

/** The bytes a store value stands for (the inverse of `valueOfBytes`). */
function bytesOfValue(value: unknown): Uint8Array {
  if (isEnvelope(value) && typeof value[STRANDS_BYTES] === 'string')
    return new Uint8Array(Buffer.from(value[STRANDS_BYTES], 'base64'));
  return new TextEncoder().encode(JSON.stringify(value));
}

/** The segments of a key or prefix, `..` refused. */
function segmentsOf(field: 'key' | 'prefix', path: string): string[] {
  const segments = path.split('/').filter(Boolean);
  if (segments.includes('..')) throw new ValidationError(field, `${path}: ".." segments are not allowed`);
  return segments;
}

/** A prefix as the SDK's backends read it: runs of `/` collapsed, leading ones dropped, a trailing one kept. */
function normalizePrefix(prefix: string): string {
  const joined = segmentsOf('prefix', prefix).join('/');
  return joined !== '' && prefix.endsWith('/') ? `${joined}/` : joined;
}

/** The key of a prefixed view's key (the SDK's `namespace` joins the same way). */
function prefixOf(prefix: string): string {
  const normalized = normalizePrefix(prefix);
  return normalized === '' ? '' : `${normalized.replace(/\/$/, '')}/`;
}

/**
 * A Strands `Storage` on `store`. Pass it to `SessionManager` (or the agent's `storage`) as it is:
 * the manager adds `session/`, the place of the store's sessions. Views from `namespace(prefix)`
 * are marked namespaced as the SDK's own are, so a manager given a view keeps its keys under it.
 */
export function createStrandsStorage(store: SessionStore): StrandsStorage {
  const shared = STRANDS_SHARED_SESSION;

  function placeOf(key: string): Place {
    const segments = segmentsOf('key', key);
    if (segments.length === 0) throw new ValidationError('key', 'must not be empty');
    if (segments[0] !== STRANDS_SESSIONS.slice(0, -1)) return { sessionId: shared, key: segments.join('/') };
    const [, sessionId, ...rest] = segments;
    if (sessionId === undefined || rest.length === 0)
      throw new ValidationError(
        'key',
        `${key}: a key under ${STRANDS_SESSIONS} is ${STRANDS_SESSIONS}<sessionId>/<key>`,
      );
    if (sessionId === shared) throw new ValidationError('key', `${key}: the session ${shared} is reserved`);
    return { sessionId, key: rest.join('/') };
  }

  /** The value keys of one store session starting with `prefix` (none for an absent session). */
  async function keysOf(sessionId: string, prefix: string): Promise<string[]> {
    // No key is longer than the key limit, and the API refuses such a bound.
    if (Buffer.byteLength(prefix) > LIMITS.key) return [];
    const keys: string[] = [];
    for await (const page of keyPages(store, sessionId, prefix))
      for (const v of page.values) keys.push(v.key);
    return keys;
  }

  /** The full keys of every Strands session whose id starts with `idPrefix`. */
  async function sessionKeys(idPrefix: string): Promise<string[]> {
    const ids: string[] = [];
    for await (const id of sessionIds(store)) if (id !== shared && id.startsWith(idPrefix)) ids.push(id);
    const keys = await mapLimited(ids, LIST_CONCURRENCY, async (id) =>
      (await keysOf(id, '')).map((k) => `${STRANDS_SESSIONS}${id}/${k}`),
    );
    return keys.flat();
  }

  async function list(prefix: string): Promise<string[]> {
    const p = normalizePrefix(prefix);
    let keys: string[];
    if (p.startsWith(STRANDS_SESSIONS)) {
      const rest = p.slice(STRANDS_SESSIONS.length);
      const slash = rest.indexOf('/');
      if (slash < 0) keys = await sessionKeys(rest);
      else {
        const sessionId = rest.slice(0, slash);
        keys =
          sessionId === shared
            ? []
            : (await keysOf(sessionId, rest.slice(slash + 1))).map(
                (k) => `${STRANDS_SESSIONS}${sessionId}/${k}`,
              );
      }
    } else {
      // Shared keys never start with `session/`; the sessions are listed when the prefix may reach them.
      const [others, sessions] = await Promise.all([
        keysOf(shared, p),
        STRANDS_SESSIONS.startsWith(p) ? sessionKeys('') : Promise.resolve([]),
      ]);
      keys = [...others, ...sessions];
    }
    // Lexicographic, as the SDK's backends sort (the store answers in UTF-8 byte order).
    return keys.sort();
  }

  const root: Storage = {
    async write(key, data) {
      const { sessionId, key: k } = placeOf(key);
      await store.save(sessionId, k, valueOfBytes(data));
    },
    async read(key) {
      const { sessionId, key: k } = placeOf(key);
      const value = await store.get(sessionId, k);
      return value === undefined ? null : bytesOfValue(value);
    },
    async delete(key) {
      const { sessionId, key: k } = placeOf(key);
      await store.deleteKey(sessionId, k);
    },
    list,
  };

  function view(prefix: string): StrandsStorage {
    const at = (key: string) => `${prefix}${key}`;
    return {
      write: (key, data) => root.write(at(key), data),
      read: (key) => root.read(at(key)),
      delete: (key) => root.delete(at(key)),
      list: async (query) => (await list(at(query))).map((key) => key.slice(prefix.length)),
      namespace: (sub) => view(prefixOf(`${prefix}${sub}`)),
      ...(prefix === '' ? {} : { [NAMESPACED]: true }),
    };
  }

  return view('');
}
