/**
 * openapi.json as the tools people point at an OpenAPI document see it: Redocly CLI (`lint`, its
 * recommended rules, redocly.yaml) and Spectral (`spectral:oas`, .spectral.yaml) report no error.
 * Each tool runs from node_modules/.bin with telemetry and update notices off, and with a preload
 * (no-network.cjs) that reports any DNS lookup or TCP connection: CI reaches only the npm registry,
 * so the tools must need no network.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'node_modules/.bin');
const PRELOAD = path.join(ROOT, 'test/openapi/no-network.cjs');

/** The environment the tools run in: no npm variables, no telemetry or update notice, the preload. */
const env = () => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_'))),
  REDOCLY_TELEMETRY: 'off',
  REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
  NO_UPDATE_NOTIFIER: '1',
  NODE_OPTIONS: `--require "${PRELOAD}"`,
});

interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a script with this Node and the tools' environment; resolves whatever its exit code. */
function run(script: string, args: readonly string[]): Promise<Ran> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [script, ...args],
      { cwd: ROOT, env: env(), maxBuffer: 1 << 26, timeout: 50_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        if (error && code === -1) reject(error);
        else resolve({ code, stdout, stderr });
      },
    );
  });
}

/** The network attempts the preload reported. */
const networkOf = (ran: Ran) => ran.stderr.split('\n').filter((line) => line.startsWith('NETWORK '));

describe('OpenAPI linters', () => {
  it('the network check sees a lookup and a connection (so it can fail)', async () => {
    const probe = path.join(ROOT, 'test/openapi/no-network-probe.mjs');
    const ran = await run(probe, []);
    const seen = networkOf(ran);
    expect(seen).toContain('NETWORK dns lookup example.invalid');
    expect(seen).toContain('NETWORK dns lookup localhost');
    expect(
      seen.some((line) => /^NETWORK connect localhost:\d+$/.test(line)),
      seen.join('\n'),
    ).toBe(true);
  });

  it('Redocly CLI lint (recommended rules): 0 errors and 0 warnings, no network', async () => {
    const ran = await run(path.join(BIN, 'redocly'), [
      'lint',
      'openapi.json',
      '--config',
      'redocly.yaml',
      '--format',
      'json',
    ]);
    expect(networkOf(ran)).toEqual([]);
    const report = JSON.parse(ran.stdout) as {
      totals: { errors: number; warnings: number };
      problems: Array<{ ruleId: string; severity: string; message: string; location?: unknown[] }>;
    };
    const list = (severity: string) =>
      report.problems
        .filter((p) => p.severity === severity)
        .map((p) => `${p.ruleId}: ${p.message} ${JSON.stringify(p.location?.[0] ?? '')}`);
    console.log(
      `redocly lint: ${report.totals.errors} errors, ${report.totals.warnings} warnings`,
      ...list('warn').map((w) => `\n  warning ${w}`),
    );
    expect(list('error')).toEqual([]);
    expect(report.totals.errors).toBe(0);
    // Warnings too: the document is kept clean, so a new one is seen when it appears.
    expect(list('warn')).toEqual([]);
    expect(ran.code).toBe(0);
  });

  it('Spectral lint (spectral:oas): 0 errors and 0 warnings, no network', async () => {
    const ran = await run(path.join(BIN, 'spectral'), [
      'lint',
      'openapi.json',
      '--ruleset',
      '.spectral.yaml',
      '--format',
      'json',
      '--quiet',
    ]);
    expect(networkOf(ran)).toEqual([]);
    // Severity: 0 error, 1 warning, 2 information, 3 hint.
    const results = JSON.parse(ran.stdout) as Array<{
      code: string;
      message: string;
      severity: number;
      path: string[];
    }>;
    const list = (severity: number) =>
      results
        .filter((r) => r.severity === severity)
        .map((r) => `${r.code}: ${r.message} (${r.path.join('.')})`);
    console.log(
      `spectral lint: ${list(0).length} errors, ${list(1).length} warnings`,
      ...list(1).map((w) => `\n  warning ${w}`),
    );
    expect(list(0)).toEqual([]);
    expect(list(1)).toEqual([]);
    expect(ran.code).toBe(0);
  });
});
