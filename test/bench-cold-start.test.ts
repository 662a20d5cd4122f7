/**
 * The bench's packaged cold start section (bench/cold-start.ts): the timing of a fresh process, and
 * the previous run's figures read back from bench/REPORT.md.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  COLD_START_HEADING,
  coldStartMs,
  coldStartSection,
  coldStartTable,
  previousColdStarts,
} from '../bench/cold-start.js';

const rows = [
  { name: 'aws/api (Lambda, entry chunk of the zip)', bytes: 567_939, ms: 276.4 },
  { name: 'aliyun/api (Function Compute bundle)', bytes: 1_355_299, ms: 257.2 },
];

describe('bench: packaged cold start', () => {
  it("prints this run beside the previous run's section, read back from the report", () => {
    const report = `# Benchmark report\n\n${coldStartSection(coldStartTable(rows, ''))}\n\n## Next\n\n| function | a | 1 |\n`;
    expect(report).toContain(`${COLD_START_HEADING}\n`);
    const previous = previousColdStarts(report);
    expect(previous.get('aws/api')).toEqual({ ms: 276, size: '567939 B' });
    expect(previous.get('aliyun/api')).toEqual({ ms: 257, size: '1355299 B' });
    const next = coldStartTable(
      rows.map((r) => ({ ...r, ms: r.ms * 2 })),
      report,
    );
    expect(next).toContain('| aws/api (Lambda, entry chunk of the zip) | 567939 | 553 | 276 | 567939 B |');
    expect(next).toContain('| aliyun/api (Function Compute bundle) | 1355299 | 514 | 257 | 1355299 B |');
  });

  it('falls back to the bundle table of a report written before the section, and to - without one', () => {
    const old = [
      '## Function bundles and cold start',
      '',
      '| function | minified bundle | import bundled ms | import unbundled ms | ratio | cold start to first answer ms |',
      '|---|---:|---:|---:|---:|---:|',
      '| aws/api (Lambda) | 1219 KB | 283 | 640 | 0.44 | 407 |',
      '',
      '## Source maps',
    ].join('\n');
    expect(previousColdStarts(old)).toEqual(new Map([['aws/api', { ms: 407, size: '1219 KB' }]]));
    expect(coldStartTable(rows, '')).toContain(
      '| aliyun/api (Function Compute bundle) | 1355299 | 257 | - | - |',
    );
    // The checked-in report gives both functions a previous figure.
    const checkedIn = previousColdStarts(readFileSync('bench/REPORT.md', 'utf8'));
    expect([...checkedIn.keys()].sort()).toEqual(['aliyun/api', 'aws/api']);
  });

  it('times a fresh process to its answer, and refuses a handler that does not answer 200', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'cold-start-'));
    const ok = path.join(dir, 'ok.mjs');
    const bad = path.join(dir, 'bad.mjs');
    await writeFile(ok, 'export const handler = async () => ({ statusCode: 200 });\n');
    await writeFile(bad, 'export const handler = async () => ({ statusCode: 503 });\n');
    const ms = coldStartMs(ok, 'm.handler()', {}, 3);
    expect(ms).toBeGreaterThan(0);
    expect(() => coldStartMs(bad, 'm.handler()', {}, 1)).toThrow(/did not answer/);
  });
});
