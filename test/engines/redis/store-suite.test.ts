/** The store suite (what is not about object storage) on the Redis engine: standalone and Cluster, as a library and through the HTTP adapter. */
import { describeStoreSuite } from '../../store/store-suite.js';
import { startTopology, storeOn, type Topology } from './harness.js';

for (const topology of ['standalone', 'cluster'] as const satisfies Topology[]) {
  for (const via of ['library', 'http'] as const) {
    describeStoreSuite(
      {
        name: `redis ${topology}`,
        makeStore: async ({ metrics }) => {
          const redis = await startTopology(topology);
          return { store: storeOn(redis, { metrics }), close: redis.close, changes: redis.changes };
        },
      },
      via,
    );
  }
}
