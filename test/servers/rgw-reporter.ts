/** A vitest reporter that prints how many tests ran against Ceph RGW (tests named with `[rgw]`). */
import type { Reporter, TestModule } from 'vitest/node';

export default class RgwTierReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const module of modules) {
      for (const test of module.children.allTests()) {
        if (!test.fullName.includes('[rgw]')) continue;
        const state = test.result().state;
        if (state === 'passed' || state === 'failed' || state === 'skipped') counts[state]++;
      }
    }
    console.log(
      `RGW tier: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped against Ceph RGW`,
    );
  }
}
