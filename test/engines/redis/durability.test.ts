/**
 * Durability as the deployment sets it (docs/backends.md, "Redis"): a standalone server with
 * `appendonly yes` and `appendfsync always`, killed with SIGKILL in the middle of a stream of
 * appends and restarted, has every append it acknowledged, in order, with the chain hash intact.
 */
import { expect, it } from 'vitest';
import { chainHash, EMPTY_HASH } from '../../../lib/contract/hash.js';
import { connectRedis } from '../../../lib/engines/redis/client.js';
import { createRedisStateStore } from '../../../lib/engines/redis/store.js';
import { startRedis } from '../../servers/redis.js';

it('kill -9 mid-load: no acknowledged append is lost', async () => {
  const server = await startRedis({ appendonly: true });
  const writerClient = connectRedis({ url: server.url });
  try {
    const writer = createRedisStateStore({ client: writerClient, prefix: 'd/' }).forUser('alice');
    const acknowledged: number[] = [];
    let hash = EMPTY_HASH;
    let stop = false;
    const load = (async () => {
      for (let n = 0; !stop; n++) {
        try {
          const result = await writer.appendList('s', 'log', [{ n }], {
            expectedCount: n,
            expectedHash: hash,
          });
          hash = result.hash;
          acknowledged.push(n);
        } catch {
          // The server is gone: what was acknowledged must survive; the next append would conflict.
          return;
        }
      }
    })();
    await new Promise((r) => setTimeout(r, 300));
    await server.crashAndRestart();
    // The client reconnects by itself; an append in flight at the kill is resent (a replay is
    // recognised) or fails. Then the load stops.
    stop = true;
    await load;
    writerClient.disconnect();
    expect(acknowledged.length).toBeGreaterThan(20);
    const readerClient = connectRedis({ url: server.url });
    try {
      const reader = createRedisStateStore({ client: readerClient, prefix: 'd/' }).forUser('alice');
      const page = await reader.getList<{ n: number }>('s', 'log');
      // At most the one append in flight at the kill landed unacknowledged.
      expect(page.count - acknowledged.length).toBeGreaterThanOrEqual(0);
      expect(page.count - acknowledged.length).toBeLessThanOrEqual(1);
      expect(page.items.slice(0, acknowledged.length).map((i) => i.n)).toEqual(acknowledged);
      expect(page.hash).toBe(chainHash(EMPTY_HASH, page.items));
    } finally {
      readerClient.disconnect();
    }
  } finally {
    writerClient.disconnect();
    await server.close();
  }
});
