/**
 * `npm run adopt` (scripts/adopt.ts): converts every session the AgentScope reference's OSS store
 * wrote under a prefix (lib/store/reference.ts), after which `adoptReference` can be off.
 *
 * Per session folder `<prefix><user>/<session>/`: objects whose user, session or key segment is no
 * encoding of this store's ids (a user `a@b.example`, a session `a b`, the reference's anonymous
 * `__anon__`) are first copied to their encoded names and then deleted (a copy already there with
 * the same bytes is kept; a different object there is a collision, reported and left alone); then
 * the session is adopted (its `ref` marker), each list converted in place (a whole save of what it
 * reads: nothing changes but the format) and each value without an incarnation written again (its
 * `inc` and `kind=state` tag, so lifecycle rules see it). Every step is idempotent: a run that
 * broke off is resumed by running it again. Folders of session ids with `/` and segments with `~`
 * are skipped and reported (the reference's names do not say where such ids end). A session
 * whose objects were moved by a run that broke off is found at its new names by the next run.
 */
import { ANONYMOUS, decodeId, encodeId, REFERENCE_ANONYMOUS } from '../contract/ids.js';
import { ObjectNotFoundError } from '../drivers/errors.js';
import type { ObjectStoreDriver } from '../drivers/types.js';
import { getOrUndefined, listAll, parseJsonObject } from './context.js';
import { layoutFor, NAME } from './layout.js';
import { REFERENCE_INC } from './reference.js';
import { createStateStore, type StateStoreOptions } from './store.js';

/** One thing `adoptPrefix` did or left alone, as it prints it. */
export interface AdoptStep {
  readonly action: 'renamed' | 'adopted' | 'converted-list' | 'tagged-value' | 'skipped' | 'collision';
  readonly name: string;
  readonly detail?: string;
}

/** What `adoptPrefix` did. */
export interface AdoptReport {
  readonly steps: readonly AdoptStep[];
  readonly sessions: number;
}

/** Options of `adoptPrefix`: the store's (`adoptReference` is forced on), and a sink for each step. */
export type AdoptOptions = Omit<StateStoreOptions, 'adoptReference'> & {
  readonly onStep?: (step: AdoptStep) => void;
};

/** The id a segment of the reference names, and whether this store names it so too. */
function idOf(kind: 'userId' | 'sessionId' | 'key', segment: string): { id: string; ours: boolean } {
  try {
    return { id: decodeId(kind, segment), ours: true };
  } catch {
    return { id: segment, ours: false };
  }
}

/** The key and kind of a reference object's name in its session folder. */
function keyOf(name: string): { key: string; kind: 'value' | 'list' | 'array' } | undefined {
  if (name.endsWith(NAME.listHead)) return { key: name.slice(0, -NAME.listHead.length), kind: 'list' };
  if (name.endsWith(NAME.listJson)) return { key: name.slice(0, -NAME.listJson.length), kind: 'array' };
  if (name.endsWith(NAME.value)) return { key: name.slice(0, -NAME.value.length), kind: 'value' };
  return undefined;
}

/** Converts every reference session under `options.prefix`; resumable, see the module's comment. */
export async function adoptPrefix(options: AdoptOptions): Promise<AdoptReport> {
  const { driver, onStep } = options;
  const prefix = options.prefix ?? '';
  const store = createStateStore({ ...options, adoptReference: true });
  const steps: AdoptStep[] = [];
  const step = (s: AdoptStep) => {
    steps.push(s);
    onStep?.(s);
  };
  let sessions = 0;
  for (const userFolder of await folders(driver, prefix)) {
    const userSegment = userFolder.slice(prefix.length, -1);
    if (userSegment.includes('~')) continue;
    // `anon` is this store's anonymous user (where `__anon__`'s objects move): a reference user
    // named so becomes the anonymous user's (docs/backends.md says so).
    const anonymous = userSegment === REFERENCE_ANONYMOUS || userSegment === ANONYMOUS;
    const user = anonymous ? { id: null, ours: false } : idOf('userId', userSegment);
    const targetRoot = `${prefix}${user.id === null ? ANONYMOUS : encodeId('userId', user.id)}/`;
    for (const sessionFolder of await folders(driver, userFolder)) {
      const sessionSegment = sessionFolder.slice(userFolder.length, -1);
      if (sessionSegment.startsWith('~')) continue;
      const objects = (await listAll(driver, sessionFolder)).map((o) => o.key);
      const direct = objects.filter((k) => !k.slice(sessionFolder.length).includes('/'));
      if (direct.length < objects.length && direct.length === 0) {
        step({ action: 'skipped', name: sessionFolder, detail: 'a session id with "/" is not adopted' });
        continue;
      }
      if (sessionSegment.includes('~')) {
        step({ action: 'skipped', name: sessionFolder, detail: 'a session id with "~" is not adopted' });
        continue;
      }
      const session = idOf('sessionId', sessionSegment);
      const targetFolder = `${targetRoot}${encodeId('sessionId', session.id)}/`;
      const keys = new Map<string, Set<'value' | 'list' | 'array'>>();
      for (const name of direct) {
        const rest = name.slice(sessionFolder.length);
        const got = rest.includes('~') ? undefined : keyOf(rest);
        if (!got) continue;
        const key = idOf('key', got.key);
        const target = `${targetFolder}${encodeId('key', key.id)}${rest.slice(got.key.length)}`;
        if (target !== name && !(await moved(driver, name, target, step))) continue;
        const kinds = keys.get(key.id) ?? new Set();
        kinds.add(got.kind);
        keys.set(key.id, kinds);
      }
      if (keys.size === 0) continue;
      const owner = store.forUser(user.id);
      // Adopted: `exists` made (or found) the marker of the reference's incarnation here. (A session
      // that only reads through the reference's own folder, a collision's, is not this one.)
      const marker = async () =>
        getOrUndefined(driver, layoutFor(prefix, user.id).marker(session.id)).then(
          (o) => o && parseJsonObject(o.body)?.inc,
        );
      if (!(await owner.exists(session.id)) || (await marker()) !== REFERENCE_INC) {
        step({
          action: 'skipped',
          name: targetFolder,
          detail: 'no reference objects there (a session of this store)',
        });
        continue;
      }
      sessions++;
      step({ action: 'adopted', name: targetFolder });
      for (const [key, kinds] of keys) {
        const base = `${targetFolder}${encodeId('key', key)}`;
        if (kinds.has('list')) {
          const head = await getOrUndefined(driver, `${base}${NAME.listHead}`);
          if (head && head.body.byteLength <= 8) {
            const page = await owner.getList(session.id, key);
            await owner.saveList(session.id, key, page.items, { ifHash: page.hash });
            step({
              action: 'converted-list',
              name: `${base}${NAME.listHead}`,
              detail: `${page.count} items`,
            });
          }
        }
        if (kinds.has('value')) {
          const name = `${base}${NAME.value}`;
          const info = await driver.head(name).catch((error: unknown) => {
            if (error instanceof ObjectNotFoundError) return undefined;
            throw error;
          });
          if (info && info.metadata.inc === undefined) {
            const got = await owner.getVersioned(session.id, key);
            if (got) {
              // Conditional where the backend can (OSS has no conditional overwrite).
              const condition = driver.capabilities.conditionalOverwrite ? { ifVersion: got.version } : {};
              await owner.save(session.id, key, got.value, condition);
              step({ action: 'tagged-value', name });
            }
          }
        }
      }
    }
  }
  return { steps, sessions };
}

/**
 * The folders directly under `prefix`, from a listing of every object under it (the reference's
 * own cost: a LIST per 1,000 objects; a one-off migration reads them all anyway).
 */
async function folders(driver: ObjectStoreDriver, prefix: string): Promise<string[]> {
  const out = new Set<string>();
  for (const { key } of await listAll(driver, prefix)) {
    const at = key.indexOf('/', prefix.length);
    if (at >= 0) out.add(key.slice(0, at + 1));
  }
  return [...out].sort();
}

/**
 * Moves a reference object to the name this store gives it: copied (unless the same bytes are
 * there already), then deleted. False when another object holds that name (a collision, left alone).
 */
async function moved(
  driver: ObjectStoreDriver,
  name: string,
  target: string,
  step: (s: AdoptStep) => void,
): Promise<boolean> {
  const [source, there] = await Promise.all([getOrUndefined(driver, name), getOrUndefined(driver, target)]);
  if (!source) return there !== undefined;
  if (there && Buffer.compare(Buffer.from(there.body), Buffer.from(source.body)) !== 0) {
    step({ action: 'collision', name, detail: `${target} holds another object; left as it is` });
    return false;
  }
  if (!there) await driver.copy(name, target, source.contentType ? { contentType: source.contentType } : {});
  await driver.delete(name);
  step({ action: 'renamed', name, detail: target });
  return true;
}
