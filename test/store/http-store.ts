/**
 * A `StateStore` whose user stores are the typed HTTP client, talking to a local node:http server
 * that serves the same store: the store suite runs through client -> server -> driver with it.
 */
import type { AddressInfo } from 'node:net';
import { createHttpClient } from '../../lib/client/index.js';
import { checkId } from '../../lib/contract/ids.js';
import type { SessionLock } from '../../lib/contract/lock.js';
import type { StateStore, StoreCapabilities } from '../../lib/contract/types.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { bearerJwtAuth } from '../../lib/http/auth.js';
import { createRouter } from '../../lib/http/router.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { createStateStore, type StateStoreOptions } from '../../lib/store/store.js';
import { hsToken, SECRET } from '../http/harness.js';

export async function httpStateStore(
  /** The object store's options, or an engine's store. */
  options: StateStoreOptions | StateStore,
  lock: SessionLock = createMemoryLock(),
): Promise<{ store: StateStore; close(): Promise<void> }> {
  const inner = 'forUser' in options ? options : createStateStore(options);
  const handle = createRouter({
    store: inner,
    lock,
    auth: bearerJwtAuth({ secret: SECRET }, { allowAnonymous: true }),
    bodyLimitBytes: 32 * 1024 * 1024,
  });
  const server = createNodeServer(handle, 32 * 1024 * 1024);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const store: StateStore = {
    // The server's own answer (GET /v1/capabilities).
    capabilities: (await (await fetch(`${baseUrl}/v1/capabilities`)).json()) as StoreCapabilities,
    forUser(userId) {
      if (userId == null || userId.trim() === '') return createHttpClient({ baseUrl });
      checkId('userId', userId);
      return createHttpClient({ baseUrl, token: () => hsToken({ sub: userId }) });
    },
    // The server's own readiness route.
    async checkReady() {
      const answer = await fetch(`${baseUrl}/v1/ready`);
      if (answer.status !== 200) throw new Error(`GET /v1/ready: ${answer.status} ${await answer.text()}`);
    },
  };
  return { store, close: () => new Promise((r) => server.close(() => r())) };
}
