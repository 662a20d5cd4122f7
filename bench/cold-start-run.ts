/**
 * `npm run bench:cold-start`: only the packaged cold start section of the bench (bench/cold-start.ts),
 * printed beside the previous run's figures in bench/REPORT.md; writes nothing.
 */
import { readFile } from 'node:fs/promises';
import { coldStartTable, measureColdStarts } from './cold-start.js';

const report = await readFile('bench/REPORT.md', 'utf8').catch(() => '');
console.log(
  `Packaged cold start, beside the previous run's (bench/REPORT.md):\n\n${coldStartTable(measureColdStarts(), report)}`,
);
