import { defineConfig } from 'vitest/config';
import { missingRgwBinaries, RGW_INSTALL } from './test/servers/rgw-binaries.js';
import { TIERS } from './test/tiers.js';

/** Whether Ceph RGW can run here (CI requires it; `RGW=off` skips it elsewhere). */
const rgwAvailable =
  process.env.CI === 'true' || (process.env.RGW !== 'off' && missingRgwBinaries().length === 0);
if (!rgwAvailable)
  console.log(`RGW tier skipped: Ceph not found (or RGW=off). Enable it with: ${RGW_INSTALL}`);

export default defineConfig({
  test: {
    // Each file's duration is printed; the slow ones are named.
    reporters: ['default', './test/servers/rgw-reporter.ts', './test/servers/ceiling-reporter.ts'],
    pool: 'forks',
    // The AWS SDK warns once per process that its releases after January 2027 need Node 22; the
    // tests run on Node 20 on purpose (the supported floor). Every other warning is kept.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    // The tiers of test/tiers.ts: `npm run test:fast` runs `fast`, `npm test` all of them.
    projects: TIERS.filter((tier) => tier.name !== 'rgw' || rgwAvailable).map((tier) => ({
      extends: true,
      test: {
        name: tier.name,
        // No test or hook has a time of its own that load alone could break: each may take up to
        // its tier's whole ceiling (a hung one still fails, and the ceiling reporter names a slow tier).
        testTimeout: tier.seconds * 1000,
        hookTimeout: tier.seconds * 1000,
        include: tier.files.map((f) => (f.endsWith('/') ? `${f}**/*.test.ts` : f)),
        exclude: [...(tier.exclude ?? [])],
        provide: { tier: tier.name },
        globalSetup: tier.servers === 'none' ? [] : ['test/servers/global-setup.ts'],
      },
    })),
  },
});
