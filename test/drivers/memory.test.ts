import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { describeDriverConformance } from '../conformance/driver-suite.js';

describeDriverConformance('memory', async () => {
  const failing = new Set<string>();
  return {
    driver: createMemoryDriver({ deleteFault: (key) => (failing.has(key) ? 'AccessDenied' : undefined) }),
    failDeletes: async (keys) => {
      for (const key of keys) failing.add(key);
    },
    reset: async () => failing.clear(),
  };
});
