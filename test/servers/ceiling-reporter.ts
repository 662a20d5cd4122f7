/**
 * A vitest reporter that prints, per issue, the time its suites took against their ceiling
 * (ceilings.ts): the sum of its files' durations, which overstates the wall time when files run in
 * parallel. Over a ceiling is reported, not failed: times on a shared machine are noise.
 */
import path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import { CEILINGS, ceilingOf } from './ceilings.js';

export default class CeilingReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const spent = new Map<string, number>();
    for (const module of modules) {
      const group = ceilingOf(path.relative(process.cwd(), module.moduleId));
      if (group) spent.set(group.issue, (spent.get(group.issue) ?? 0) + module.diagnostic().duration);
    }
    const lines = CEILINGS.map((c) => {
      const seconds = (spent.get(c.issue) ?? 0) / 1000;
      return `  ${c.issue.padEnd(46)} ${seconds.toFixed(0).padStart(4)} s of ${c.seconds} s${seconds > c.seconds ? '  OVER' : ''}`;
    });
    const total = CEILINGS.reduce((sum, c) => sum + c.seconds, 0);
    console.log(
      `Suite time per issue (ceilings add up to ${(total / 60).toFixed(1)} min):\n${lines.join('\n')}`,
    );
  }
}
