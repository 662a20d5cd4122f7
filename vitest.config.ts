import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/servers/global-setup.ts'],
    // Each file's duration is printed; the slow ones are named.
    reporters: ['default', './test/servers/rgw-reporter.ts', './test/servers/ceiling-reporter.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
