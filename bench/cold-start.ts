/**
 * Cold start of the deployed artifacts: `npm run package`'s zip unpacked as Lambda unpacks it (the
 * entry chunk and its chunks) and the Function Compute bundle, each imported by a fresh node
 * process that answers one health event; wall time from spawning the process to its exit after the
 * answer, median of 5. Printed beside the previous run's figures (the "Packaged cold start" table
 * of bench/REPORT.md): a trend, not a gate. `npm run bench:cold-start` runs only this section.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** The heading of the section in bench/REPORT.md. */
export const COLD_START_HEADING = '## Packaged cold start';

const HEALTH = {
  aws: `m.handler({ version: '2.0', routeKey: 'GET /v1/health', rawPath: '/v1/health', rawQueryString: '', headers: {}, requestContext: { http: { method: 'GET', path: '/v1/health' }, requestId: 'r1' }, isBase64Encoded: false }, { functionName: 'f', awsRequestId: 'r1', getRemainingTimeInMillis: () => 1000 })`,
  fc: `m.handler(Buffer.from(JSON.stringify({ rawPath: '/v1/health', headers: {}, queryParameters: {}, requestContext: { requestId: 'r1', http: { method: 'GET' } } })))`,
};

const ENV = {
  NODE_OPTIONS: '--enable-source-maps',
  LOCK_BACKEND: 'dynamodb',
  LOCK_TABLE: 'bench',
  AWS_REGION: 'us-east-1',
  LOG_LEVEL: 'SILENT',
};
const LAMBDA_ENV = { ...ENV, AWS_LAMBDA_FUNCTION_NAME: 'bench', STORE_BACKEND: 's3', S3_BUCKET: 'bench' };
const FC_ENV = {
  ...ENV,
  FC_FUNCTION_NAME: 'bench',
  STORE_BACKEND: 'oss',
  OSS_BUCKET: 'bench-bucket',
  OSS_REGION: 'oss-cn-hangzhou',
  ALIBABA_CLOUD_ACCESS_KEY_ID: 'bench',
  ALIBABA_CLOUD_ACCESS_KEY_SECRET: 'bench',
  AUTH_JWKS_URL: 'http://127.0.0.1:1/jwks',
};

export interface ColdStartRow {
  readonly name: string;
  /** The handler file's bytes (the Lambda's entry chunk, the FC bundle). */
  readonly bytes: number;
  /** Median wall time, ms. */
  readonly ms: number;
}

/** The median wall time of `samples` fresh node processes importing `file` and answering `call`. */
export function coldStartMs(file: string, call: string, env: NodeJS.ProcessEnv, samples = 5): number {
  const script = `const m = await import(${JSON.stringify(pathToFileURL(file).href)}); const r = await ${call}; if (r.statusCode !== 200) { console.error(JSON.stringify(r)); process.exit(1); }`;
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const started = performance.now();
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      env: { PATH: process.env.PATH, ...env },
      cwd: path.dirname(file),
      encoding: 'utf8',
    });
    const ms = performance.now() - started;
    if (child.status !== 0) throw new Error(`${file} did not answer: ${child.stderr}`);
    times.push(ms);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}

/** Packages (`npm run package`), unpacks the zip and measures both handlers. */
export function measureColdStarts(): ColdStartRow[] {
  execFileSync('npm', ['run', '-s', 'package'], {
    stdio: 'ignore',
    env: { ...process.env, SLS_TELEMETRY_DISABLED: '1', SLS_NOTIFICATIONS_MODE: 'off' },
  });
  const unpacked = mkdtempSync(path.join(tmpdir(), 'agent-state-cold-'));
  try {
    execFileSync('unzip', ['-q', '.serverless/agent-state.zip', '-d', unpacked]);
    const lambda = path.join(unpacked, 'functions/aws/api.mjs');
    const fc = path.resolve('dist/aliyun/api.mjs');
    return [
      {
        name: 'aws/api (Lambda, entry chunk of the zip)',
        bytes: statSync(lambda).size,
        ms: coldStartMs(lambda, HEALTH.aws, LAMBDA_ENV),
      },
      {
        name: 'aliyun/api (Function Compute bundle)',
        bytes: statSync(fc).size,
        ms: coldStartMs(fc, HEALTH.fc, FC_ENV),
      },
    ];
  } finally {
    rmSync(unpacked, { recursive: true, force: true });
  }
}

/** The function a row names: `aws/api`, `aliyun/api`. */
const functionOf = (name: string) => name.split(' ')[0] as string;

/** The body of the section of `report` under `heading`, or ''. */
function sectionOf(report: string, heading: string): string {
  const start = report.indexOf(`${heading}\n`);
  if (start < 0) return '';
  const end = report.indexOf('\n## ', start + heading.length);
  return report.slice(start, end < 0 ? undefined : end);
}

/** The table rows of a section, as their cells. */
const rowsOf = (section: string) =>
  section
    .split('\n')
    .filter((l) => l.startsWith('| ') && !l.startsWith('| function'))
    .map((l) =>
      l
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    );

/**
 * The previous run's cold start (ms) and handler size of each function (`aws/api`, `aliyun/api`),
 * from this section of `report` (bench/REPORT.md); a report written before the section existed
 * gives the last column of "Function bundles and cold start" (the unsplit bundles, timed from the
 * process's own start), its size as that table has it.
 */
export function previousColdStarts(report: string): Map<string, { ms: number; size: string }> {
  const previous = new Map<string, { ms: number; size: string }>();
  for (const cells of rowsOf(sectionOf(report, COLD_START_HEADING))) {
    const ms = Number(cells[2]);
    if (cells[0] && Number.isFinite(ms)) previous.set(functionOf(cells[0]), { ms, size: `${cells[1]} B` });
  }
  if (previous.size > 0) return previous;
  for (const cells of rowsOf(sectionOf(report, '## Function bundles and cold start'))) {
    const ms = Number(cells.at(-1));
    if (cells[0] && Number.isFinite(ms)) previous.set(functionOf(cells[0]), { ms, size: String(cells[1]) });
  }
  return previous;
}

/** The section's table: this run beside the previous one. */
export function coldStartTable(rows: readonly ColdStartRow[], report: string): string {
  const previous = previousColdStarts(report);
  return [
    '| function | handler file bytes | cold start to first answer ms | previous run ms | previous size |',
    '|---|---:|---:|---:|---:|',
    ...rows.map((r) => {
      const before = previous.get(functionOf(r.name));
      return `| ${r.name} | ${r.bytes} | ${r.ms.toFixed(0)} | ${before ? before.ms.toFixed(0) : '-'} | ${before?.size ?? '-'} |`;
    }),
  ].join('\n');
}

/** The section of bench/REPORT.md. */
export function coldStartSection(table: string): string {
  return [
    COLD_START_HEADING,
    '',
    "What a deployment starts: `npm run package`'s zip unpacked (the Lambda's entry chunk with its chunks beside it) and the Function Compute bundle, each imported by a fresh node process (`--enable-source-maps`, as deployed) answering one health event; wall time from spawning the process to its exit, median of 5, beside the previous run's. Printed, not a gate.",
    '',
    table,
  ].join('\n');
}
