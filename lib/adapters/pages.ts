/**
 * Paging the adapters share: every page of a session's keys (none for an absent session), and
 * every session id of the user, one call per page.
 */
import { SessionNotFoundError } from '../contract/errors.js';
import type { KeyPage, SessionStore } from '../contract/types.js';

/** Each page of the session's keys starting with `prefix` (default all); an absent session has none. */
export async function* keyPages(
  store: SessionStore,
  sessionId: string,
  prefix?: string,
): AsyncGenerator<KeyPage> {
  let cursor: string | undefined;
  do {
    const page = await store
      .listKeys(sessionId, { ...(prefix ? { prefix } : {}), ...(cursor ? { cursor } : {}) })
      .catch((error: unknown) => {
        if (error instanceof SessionNotFoundError) return undefined;
        throw error;
      });
    if (page === undefined) return;
    yield page;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
}

/** Every session id of the store's user. */
export async function* sessionIds(store: SessionStore): AsyncGenerator<string> {
  let cursor: string | undefined;
  do {
    const page = await store.listSessionIds(cursor ? { cursor } : {});
    for (const s of page.sessions) yield s.sessionId;
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
}
