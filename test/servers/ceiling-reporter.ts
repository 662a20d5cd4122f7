/**
 * A vitest reporter that prints, per tier (test/tiers.ts), the time its files took against its
 * ceiling: the sum of the files' durations, which overstates the wall time when files run in
 * parallel. Over a ceiling is reported, not failed: times on a shared machine are noise.
 */
import type { Reporter, TestModule } from 'vitest/node';
import { TIERS } from '../tiers.js';

export default class CeilingReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const spent = new Map<string, number>();
    for (const module of modules) {
      const name = module.project.name;
      spent.set(name, (spent.get(name) ?? 0) + module.diagnostic().duration);
    }
    const lines = TIERS.filter((t) => spent.has(t.name)).map((t) => {
      const seconds = (spent.get(t.name) ?? 0) / 1000;
      return `  ${t.name.padEnd(10)} ${seconds.toFixed(0).padStart(4)} s of ${t.seconds} s${seconds > t.seconds ? '  OVER' : ''}`;
    });
    const total = TIERS.reduce((sum, t) => sum + t.seconds, 0);
    console.log(
      `Suite time per tier (ceilings add up to ${(total / 60).toFixed(1)} min):\n${lines.join('\n')}`,
    );
  }
}
