/**
 * `npm run soak`: the full-size concurrency soak (16 agents x 500 turns, 2 agents per session, with
 * and without the lock) against s3rver behind the S3 front and dynalite; prints the figures and
 * writes them into bench/SOAK.md.
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { startLocalBackends } from '../test/servers/local-backends.js';
import { runSoak } from '../test/soak/soak.js';

// The local servers run in a child process, so that s3rver and the agents use both cores.
if (process.argv.includes('--backends')) {
  const local = await startLocalBackends('soak');
  console.log(JSON.stringify({ s3: local.s3Front.endpoint, dynamoPort: local.dynamoPort }));
  process.stdin.resume();
  process.stdin.on('end', () => void local.stop().then(() => process.exit(0)));
} else {
  await main();
}

async function main() {
  const agents = Number(process.env.SOAK_AGENTS ?? 16);
  const turns = Number(process.env.SOAK_TURNS ?? 500);
  const here = path.dirname(new URL(import.meta.url).pathname).replace(/\/\.bench-build\/bench$/, '/bench');
  const child = spawn(
    process.execPath,
    [...process.execArgv, new URL(import.meta.url).pathname, '--backends'],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const first = await new Promise<string>((resolve) =>
    createInterface({ input: child.stdout }).once('line', resolve),
  );
  const backends = JSON.parse(first) as { s3: string; dynamoPort: number };
  try {
    const options = {
      agents,
      turns,
      seed: 11,
      s3Endpoint: backends.s3,
      bucket: 'soak',
      dynamoEndpoint: `http://127.0.0.1:${backends.dynamoPort}`,
      progress: (done: number) => {
        if (done % 1000 === 0) console.log(`  ${done} turns at ${new Date().toISOString().slice(11, 19)}`);
      },
    };
    const results = [await runSoak(options, 'locked'), await runSoak(options, 'unlocked')];
    const table = [
      '| mode | agents x turns | acknowledged | lost or doubled | conflicts retried | lock waits over 10 s | max lock wait ms | max lock hold ms | seconds | turns/s |',
      '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...results.map(
        (r) =>
          `| ${r.mode} | ${r.agents} x ${r.turns} | ${r.acknowledged} | ${r.problems.length} | ${r.conflictsRetried} | ${r.lockTimeouts} | ${r.maxWaitMs.toFixed(0)} | ${r.maxHoldMs.toFixed(0)} | ${r.seconds.toFixed(1)} | ${(r.acknowledged / r.seconds).toFixed(1)} |`,
      ),
    ].join('\n');
    console.log(table);
    for (const r of results) for (const p of r.problems) console.log(`PROBLEM (${r.mode}): ${p}`);
    await writeFile(
      path.join(here, 'SOAK.md'),
      `# Concurrency soak\n\nWritten by \`npm run soak\` on ${new Date().toISOString().slice(0, 10)}: agents against the local server (s3 driver on s3rver behind the S3 front, DynamoDB lock on dynalite), 2 agents per session, seeded think time of 50-250 ms between turns.\n\n${table}\n`,
    );
    if (results.some((r) => r.problems.length > 0)) process.exitCode = 1;
  } finally {
    child.stdin.end();
  }
}
