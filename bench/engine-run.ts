/**
 * `npm run bench:engines`: only the engine section of `npm run bench` (bench/engine-bench.ts), printed;
 * `-- --smoke` at CI's small sizes. Writes nothing.
 */
import { ENGINE_FULL, ENGINE_SMOKE, engineReport, runEngineBench } from './engine-bench.js';

const smoke = process.argv.includes('--smoke');
const started = performance.now();
const result = await runEngineBench({
  ...(smoke ? ENGINE_SMOKE : ENGINE_FULL),
  log: (line) => console.log(`  ${line}`),
});
console.log(
  `\nRedis and MySQL engines against the seed's patterns (${((performance.now() - started) / 1000).toFixed(0)} s):\n`,
);
console.log(engineReport(result));
