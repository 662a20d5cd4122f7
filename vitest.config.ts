import { existsSync } from 'node:fs';
import path from 'node:path';
import { defineConfig } from 'vitest/config';
import { TIERS } from './test/tiers.js';

/** Whether Ceph RGW can run here (CI requires it; `RGW=off` skips it elsewhere). */
const rgwAvailable =
  process.env.CI === 'true' ||
  (process.env.RGW !== 'off' &&
    ['radosgw', 'ceph-mon'].every((bin) =>
      (process.env.PATH ?? '').split(':').some((dir) => existsSync(path.join(dir, bin))),
    ));
if (!rgwAvailable)
  console.log(
    'RGW tier skipped: Ceph not found (or RGW=off). Enable it with: sudo apt-get install -y --no-install-recommends ceph-mon ceph-osd radosgw ceph-common',
  );

export default defineConfig({
  test: {
    // Each file's duration is printed; the slow ones are named.
    reporters: ['default', './test/servers/rgw-reporter.ts', './test/servers/ceiling-reporter.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The tiers of test/tiers.ts: `npm run test:fast` runs `fast`, `npm test` all of them.
    projects: TIERS.filter((tier) => tier.name !== 'rgw' || rgwAvailable).map((tier) => ({
      extends: true,
      test: {
        name: tier.name,
        include: tier.files.map((f) => (f.endsWith('/') ? `${f}**/*.test.ts` : f)),
        exclude: [...(tier.exclude ?? [])],
        provide: { tier: tier.name },
        globalSetup: tier.servers === 'none' ? [] : ['test/servers/global-setup.ts'],
      },
    })),
  },
});
