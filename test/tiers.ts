/**
 * The test tiers (docs/DEVELOPING.md, "Test tiers"): vitest projects, each with the files it runs,
 * the servers it starts and its time ceiling in CI. vitest.config.ts builds the projects from this
 * list, the ceiling reporter prints each tier's time against its ceiling, and
 * test/ceilings.test.ts checks that every test file is in a tier and that the ceilings add up to
 * at most 25 minutes.
 *
 * A file may be in several tiers: `backends()` (test/backends.ts) gives each tier its own backends
 * (fast: memory and fs; servers: s3rver and the OSS front; rgw: Ceph RGW), and a block that needs
 * one tier runs under `describe.runIf(onTier('servers'))`.
 */
export type TierName = 'fast' | 'servers' | 'rgw' | 'java' | 'deploy' | 'browser' | 'mysql' | 'redis';

export interface Tier {
  readonly name: TierName;
  /** Test files (paths from the project root) or folders ending with `/`. */
  readonly files: readonly string[];
  /** Files of those folders it leaves to another tier. */
  readonly exclude?: readonly string[];
  /** The local servers it starts (test/servers/global-setup.ts): none, the local ones, or those and Ceph RGW. */
  readonly servers: 'none' | 'local' | 'local+rgw';
  /**
   * About 1.15 times its files' summed time in a fresh-clone CI on this machine (2 cores); also
   * the timeout of each of its tests and hooks.
   */
  readonly seconds: number;
}

export const TIERS: readonly Tier[] = [
  {
    name: 'fast',
    // Memory and fs, no server: the inner loop (`npm run test:fast`, two workers).
    files: [
      'test/house/',
      'test/util/',
      'test/contract/',
      'test/ceilings.test.ts',
      'test/bench-cold-start.test.ts',
      'test/http/',
      'test/client/contended.test.ts',
      'test/client/abort.test.ts',
      'test/client/conditional-save.test.ts',
      'test/client/idempotent-append.test.ts',
      'test/client/last-items.test.ts',
      'test/client/progress.test.ts',
      'test/client/retry-after.test.ts',
      'test/client/timeouts.test.ts',
      'test/client/manners.test.ts',
      'test/client/capabilities.test.ts',
      'test/client/user-header.test.ts',
      'test/client/revisions.test.ts',
      'test/client/universal-transfers.test.ts',
      'test/client/universal-bundle.test.ts',
      'test/drivers/memory.test.ts',
      'test/drivers/fs.test.ts',
      'test/drivers/refusals.test.ts',
      'test/lock/',
      'test/store/store.test.ts',
      'test/store/store-http.test.ts',
      'test/store/capabilities.test.ts',
      'test/store/store-properties.test.ts',
      'test/store/append-expiry.test.ts',
      'test/store/append-codec.test.ts',
      'test/store/commits.test.ts',
      'test/store/memory-session.test.ts',
      'test/store/reference-adoption.test.ts',
      'test/workspaces/workspaces.test.ts',
      'test/workspaces/snapshot-library.test.ts',
      'test/workspaces/file-reads.test.ts',
      'test/workspaces/snapshots.test.ts',
      'test/adapters/',
      'test/openapi/document.test.ts',
    ],
    // Counted on s3rver, beside the other budgets.
    exclude: ['test/adapters/langgraph-store-budgets.test.ts'],
    servers: 'none',
    seconds: 160,
  },
  {
    name: 'servers',
    // s3rver behind the S3 front, the OSS front, dynalite: the backends' own behaviour and budgets.
    files: [
      'test/drivers/s3.test.ts',
      'test/drivers/oss.test.ts',
      'test/drivers/dynamodb-server.test.ts',
      'test/drivers/transfer.test.ts',
      'test/client/big-list-items.test.ts',
      'test/lock/',
      'test/store/store.test.ts',
      'test/store/commits.test.ts',
      'test/store/append-budgets.test.ts',
      'test/store/list-budgets.test.ts',
      'test/store/capabilities.test.ts',
      'test/store/reference-adoption.test.ts',
      // Counted and big-data cases on memory: out of the inner loop, beside the other budgets.
      'test/store/keys.test.ts',
      'test/store/truncate.test.ts',
      'test/client/whole-lists.test.ts',
      'test/adapters/langgraph-store-budgets.test.ts',
      // Debian's chromium, driven by playwright-core: the universal client in a Web Worker.
      'test/client/worker.test.ts',
      'test/store/backend-probe.test.ts',
      'test/workspaces/',
      'test/faults/',
      'test/docs/',
      'test/soak/',
      'test/bench-smoke.test.ts',
    ],
    // Pure library code, no backend: run once, in the fast tier.
    exclude: ['test/workspaces/snapshot-library.test.ts', 'test/workspaces/file-reads.test.ts'],
    servers: 'local',
    seconds: 610,
  },
  {
    name: 'rgw',
    // Ceph RGW, a real S3 (required in CI).
    files: [
      'test/drivers/rgw.test.ts',
      'test/store/capabilities.test.ts',
      'test/drivers/transfer.test.ts',
      'test/lock/with-lock.test.ts',
      'test/store/store.test.ts',
      'test/store/reference-adoption.test.ts',
      'test/workspaces/',
      'test/deploy/rgw-lifecycle.test.ts',
      'test/deploy/bootstrap.test.ts',
    ],
    exclude: [
      'test/workspaces/snapshot-library.test.ts',
      'test/workspaces/file-reads.test.ts',
      'test/workspaces/sweep.test.ts',
    ],
    servers: 'local+rgw',
    seconds: 335,
  },
  { name: 'java', files: ['test/java/'], servers: 'none', seconds: 40 },
  // The session console in Debian's chromium against the local server it starts itself.
  { name: 'browser', files: ['test/console/'], servers: 'none', seconds: 30 },
  // Debian's redis-server, standalone and a Cluster of three masters, started by the tests themselves.
  { name: 'redis', files: ['test/engines/redis/'], servers: 'none', seconds: 65 },
  {
    name: 'deploy',
    // Packaging and deployment: the npm package (and its framework peer matrix), the templates,
    // the OpenAPI tools.
    files: [
      'test/package/',
      'test/peers/',
      'test/openapi/lint.test.ts',
      'test/openapi/types.test.ts',
      'test/deploy/',
    ],
    exclude: ['test/deploy/rgw-lifecycle.test.ts'],
    servers: 'local',
    seconds: 180,
  },
  // MariaDB 10.11 from Debian, started by the tests themselves (and a real MySQL when MYSQL_URL is set).
  {
    name: 'mysql',
    files: [
      'test/engines/mysql.test.ts',
      'test/engines/mysql-lock.test.ts',
      'test/engines/mysql-store-suite.test.ts',
      'test/engines/mysql-server.test.ts',
      'test/engines/mysql-bench.test.ts',
      'test/engines/mysql-http-contract.test.ts',
      'test/engines/mysql-blobs.test.ts',
      'test/engines/mysql-sweep.test.ts',
    ],
    servers: 'none',
    seconds: 40,
  },
];

/** Whether a test file (a path from the project root) is one of a tier's. */
export function inTier(tier: Tier, file: string): boolean {
  if (tier.exclude?.includes(file)) return false;
  return tier.files.some((f) => (f.endsWith('/') ? file.startsWith(f) : file === f));
}
