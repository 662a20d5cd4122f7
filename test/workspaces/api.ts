/**
 * The API over one driver on node:http, recording the size of every request and answer the
 * function handles, so a suite can assert that large content never passes through it.
 */
import type { AddressInfo } from 'node:net';
import { createHttpClient, type NodeHttpSessionStore } from '../../lib/client/node/index.js';
import type { SessionLock } from '../../lib/contract/lock.js';
import type { FsDriver } from '../../lib/drivers/fs.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { bearerJwtAuth } from '../../lib/http/auth.js';
import { createRouter } from '../../lib/http/router.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { createStateStore, type StateStoreOptions } from '../../lib/store/store.js';
import { hsToken, SECRET } from '../http/harness.js';

export interface Seen {
  method: string;
  path: string;
  status: number;
  requestBytes: number;
  answerBytes: number;
}

export interface WorkspaceApi {
  readonly baseUrl: string;
  /** The store's object prefix. */
  readonly prefix: string;
  readonly seen: Seen[];
  /** The server's lock: leases whose tokens its writes accept. */
  readonly lock: SessionLock;
  /** The typed client of one user. */
  client(user: string): NodeHttpSessionStore;
  /** A raw call as one user. */
  call(user: string, method: string, path: string, body?: unknown): Promise<Response>;
  close(): Promise<void>;
}

/** Where the fs driver's presigned URLs point: the API started last (one per test file at a time). */
export const localBase = { url: '' };

/** Body limit of the API under test: small, so that "too large for a body" is cheap to reach. */
export const BODY_LIMIT = 64 * 1024;

export async function startWorkspaceApi(
  driver: ObjectStoreDriver,
  options: Partial<StateStoreOptions> = {},
): Promise<WorkspaceApi> {
  const prefix = `ws-${Date.now()}-${Math.random().toString(36).slice(2)}/`;
  const store = createStateStore({ driver, prefix, ...options });
  const lock = createMemoryLock();
  const handle = createRouter({
    store,
    lock,
    auth: bearerJwtAuth({ secret: SECRET }),
    bodyLimitBytes: BODY_LIMIT,
  });
  const seen: Seen[] = [];
  const server = createNodeServer(
    async (request) => {
      const response = await handle(request);
      seen.push({
        method: request.method,
        path: request.path,
        status: response.status,
        requestBytes: request.body?.byteLength ?? 0,
        answerBytes: Buffer.byteLength(response.body ?? ''),
      });
      return response;
    },
    BODY_LIMIT,
    'serveBlob' in driver && typeof driver.serveBlob === 'function'
      ? { serveBlob: driver.serveBlob as FsDriver['serveBlob'] & {}, limitBytes: 256 * 1024 * 1024 }
      : undefined,
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  localBase.url = baseUrl;
  return {
    baseUrl,
    prefix,
    seen,
    lock,
    client: (user) =>
      createHttpClient({ baseUrl, token: () => hsToken({ sub: user }), bodyLimitBytes: BODY_LIMIT }),
    call: async (user, method, path, body) =>
      fetch(`${baseUrl}${path}`, {
        method,
        redirect: 'manual',
        headers: {
          authorization: `Bearer ${await hsToken({ sub: user })}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    close: () => new Promise((r) => server.close(() => r())),
  };
}
