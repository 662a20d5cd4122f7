/**
 * The blob side of an engine store (docs/DESIGN.md, "What lives where"): workspaces and workspace
 * snapshots of a Redis or MySQL store live in the blob store BLOB_BACKEND names — an object store
 * over its driver (lib/http/app.ts), with its own session markers under the same prefix, user and
 * session ids. An engine's user store is wrapped (`withBlobs`): those calls go to the blob side's
 * user store of the same user, with the same lock as the authority over tokens (so they are fenced
 * exactly as on object storage); deleting a session deletes its blob side too; and a write keeps
 * the blob side's marker alive (`touchSession`, at most once per keep-alive interval per process),
 * so the blobs of an active session never expire before it. Without a blob store every such call
 * is 501 `unsupported`, naming BLOB_BACKEND.
 */
import { UnsupportedOperationError } from './errors.js';
import type { TokenAuthority } from './lock.js';
import type { SessionPage, SessionStore } from './types.js';
import type { WorkspacePackSweeper, WorkspaceSnapshotStore } from './workspace-snapshots.js';

/** A user's store on the blob side: what an engine delegates to it. */
export type BlobUserStore = SessionStore &
  WorkspaceSnapshotStore &
  WorkspacePackSweeper & {
    /** Keeps a live session's marker fresh (at most once per keep-alive interval); creates nothing. */
    touchSession(sessionId: string): Promise<void>;
  };

/**
 * The blob store an engine is given (lib/http/app.ts makes it from BLOB_BACKEND's driver); its
 * `sweepWorkspacePacks` sweeps every user's packs (the scheduled sweep, lib/lifecycle/sweep.ts).
 */
export interface BlobStore extends WorkspacePackSweeper {
  forUser(userId: string | null, options?: { readonly authority?: TokenAuthority }): BlobUserStore;
  /** The keep-alive interval: the blob side is touched at most once per interval per session. */
  readonly keepAliveMs: number;
  /**
   * Writes an archive's body (Redis: an archived list, offloaded from RAM) create-only under its
   * content's SHA-256, in the session's blob folder; answers that id (an existing one is the same).
   */
  putArchive(userId: string | null, sessionId: string, key: string, body: string): Promise<string>;
  /** An archive's body, or undefined when it is not there. */
  getArchive(userId: string | null, sessionId: string, key: string, id: string): Promise<string | undefined>;
}

/** What an engine's user store delegates to the blob side. */
const DELEGATED = [
  'createWorkspaceUpload',
  'completeWorkspaceUpload',
  'listWorkspaces',
  'getWorkspace',
  'deleteWorkspace',
  'startWorkspaceSnapshot',
  'commitWorkspaceSnapshot',
  'listWorkspaceSnapshots',
  'getWorkspaceSnapshot',
  'deleteWorkspaceSnapshot',
  'sweepWorkspacePacks',
] as const;
const DELEGATED_NAMES = new Set<string>(DELEGATED);

/** An engine's writes to a session: the first of a keep-alive interval touches the blob side. */
const WRITES = new Set([
  'save',
  'deleteKey',
  'saveList',
  'appendList',
  'truncateList',
  'deleteList',
  'commit',
  'commitAndRelease',
]);

/** The engine's user store minus what the blob side answers. */
export type EngineUserStore = Omit<SessionStore, (typeof DELEGATED)[number] & keyof SessionStore>;

/**
 * The blob side of one engine store: the sessions touched recently (per process), and the names of
 * the refusal without a blob store (`<engine> (BLOB_BACKEND=none)`).
 */
export class EngineBlobs {
  private readonly touched = new Map<string, number>();

  constructor(
    private readonly store: BlobStore | undefined,
    private readonly engine: string,
  ) {}

  /** The name an `unsupported` refusal gives the backend. */
  get backend(): string {
    return `${this.engine} (BLOB_BACKEND=none)`;
  }

  /** Whether a blob store is configured. */
  get configured(): boolean {
    return this.store !== undefined;
  }

  /** The blob side of a user, or the refusal of `operation` without a blob store. */
  side(userId: string | null, authority: TokenAuthority | undefined, operation: string): BlobUserStore {
    if (!this.store) throw new UnsupportedOperationError(operation, this.backend);
    return this.store.forUser(userId, authority ? { authority } : {});
  }

  /** The blob store's archive calls (undefined without a blob store). */
  get archives(): Pick<BlobStore, 'putArchive' | 'getArchive'> | undefined {
    return this.store;
  }

  /** The blob side's marker of a session kept fresh, at most once per interval here; best effort. */
  async touch(userId: string | null, sessionId: string): Promise<void> {
    if (!this.store) return;
    const id = `${userId ?? ''}\u0000${sessionId}`;
    const now = Date.now();
    if (now - (this.touched.get(id) ?? -Infinity) < this.store.keepAliveMs) return;
    this.touched.set(id, now);
    if (this.touched.size > 10_000) this.touched.delete(this.touched.keys().next().value as string);
    await this.store
      .forUser(userId)
      .touchSession(sessionId)
      .catch(() => this.touched.delete(id));
  }

  /**
   * The engine's user store with the blob side: workspaces and snapshots delegated, a session's
   * delete (and a user's) followed by its blob side's, writes keeping the blob side alive.
   */
  wrap<T extends EngineUserStore>(
    target: T,
    userId: string | null,
    authority: TokenAuthority | undefined,
  ): T & SessionStore & WorkspaceSnapshotStore & WorkspacePackSweeper {
    return new Proxy(target, {
      get: (obj, name, receiver) => {
        // Without a blob store there are no packs to sweep: the sweep skips such a store.
        if (name === 'sweepWorkspacePacks' && !this.store) return undefined;
        if (typeof name === 'string' && DELEGATED_NAMES.has(name)) {
          return async (...args: unknown[]) => {
            const side = this.side(
              userId,
              authority,
              name.includes('Snapshot') ? 'workspace snapshots' : 'workspaces',
            );
            return (side[name as (typeof DELEGATED)[number]] as (...a: unknown[]) => Promise<unknown>)(
              ...args,
            );
          };
        }
        const value = Reflect.get(obj, name, receiver);
        if (typeof value !== 'function' || typeof name !== 'string') return value;
        if (name === 'delete' && this.store)
          return async (sessionId: string, options?: unknown) => {
            await value.call(obj, sessionId, options);
            // Fenced already (the engine's delete): the blob side goes without a token.
            await this.side(userId, authority, 'workspaces').delete(sessionId);
          };
        if (name === 'deleteAllSessions' && this.store)
          return async () => {
            // The engine's sessions first (a blob folder may have no marker of its own: archives).
            const ids: string[] = [];
            let cursor: string | null = null;
            do {
              const page: SessionPage = await (obj as EngineUserStore).listSessionIds({
                ...(cursor ? { cursor } : {}),
              });
              ids.push(...page.sessions.map((x) => x.sessionId));
              cursor = page.nextCursor;
            } while (cursor);
            await value.call(obj);
            const side = this.side(userId, authority, 'workspaces');
            for (const id of ids) await side.delete(id);
            await side.deleteAllSessions();
          };
        if (WRITES.has(name) && this.store)
          return (sessionId: string, ...rest: unknown[]) => {
            // A turn's fast path answers undefined when it does not apply: so does this.
            const result = value.call(obj, sessionId, ...rest) as Promise<unknown> | undefined;
            return result?.then(async (answer) => {
              await this.touch(userId, sessionId);
              return answer;
            });
          };
        return value;
      },
    }) as T & SessionStore & WorkspaceSnapshotStore & WorkspacePackSweeper;
  }
}
