/**
 * The metrics contract (lib/http/metrics.ts): the EMF blobs Powertools Metrics writes to stdout,
 * their namespace, metric names and units, and exactly the dimension sets the alarms and
 * docs/deploying.md rely on.
 */
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { type App, createApp } from '../../lib/http/app.js';
import { platformClaimsAuth } from '../../lib/http/auth.js';
import { STORE_METRICS, statusClassOf } from '../../lib/http/metrics.js';
import { methodsOf, ROUTES } from '../../lib/http/routes/index.js';
import type { HttpRequest } from '../../lib/http/types.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { PROBLEMS } from '../../lib/protocol/problems.js';
import { PROBE_OUTCOMES } from '../../lib/store/probe.js';

// biome-ignore lint/suspicious/noExplicitAny: EMF blobs are inspected loosely
type Blob = Record<string, any>;

/** The EMF blobs written to stdout while `act` runs (and, after it, the ones `app` still stores). */
async function blobsOf(app: App, act: () => Promise<unknown>): Promise<Blob[]> {
  const lines: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    await act();
    app.metrics?.publishStoredMetrics();
  } finally {
    spy.mockRestore();
  }
  return lines
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Blob)
    .filter((b) => b._aws);
}

const directive = (blob: Blob | undefined) => blob?._aws.CloudWatchMetrics[0];
const named = (blobs: Blob[], metric: string) =>
  blobs.filter((b) => directive(b).Metrics.some((m: { Name: string }) => m.Name === metric));

/** An app as on Lambda (its metrics on), over memory, with API Gateway's claims. */
function lambdaApp(env: Record<string, string> = {}): App {
  const config = loadConfig({
    AWS_LAMBDA_FUNCTION_NAME: 'f',
    STORE_BACKEND: 's3',
    S3_BUCKET: 'b',
    LOCK_BACKEND: 'dynamodb',
    LOCK_TABLE: 't',
    LOG_LEVEL: 'SILENT',
    ...env,
  });
  return createApp(config, {
    driver: createMemoryDriver(),
    lock: createMemoryLock(),
    auth: platformClaimsAuth(),
  });
}

const request = (method: string, path: string, body?: unknown): HttpRequest => ({
  method,
  path,
  query: {},
  headers: {},
  body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)),
  requestId: 'r',
  claims: { sub: 'alice' },
});

describe('metrics', () => {
  let saved: string | undefined;
  beforeEach(() => {
    saved = process.env.POWERTOOLS_METRICS_DISABLED;
    delete process.env.POWERTOOLS_METRICS_DISABLED;
  });
  afterEach(() => {
    if (saved !== undefined) process.env.POWERTOOLS_METRICS_DISABLED = saved;
  });

  it('Requests and Latency: [service], [service, route], [service, route, statusClass], in POWERTOOLS_METRICS_NAMESPACE', async () => {
    const app = lambdaApp({ POWERTOOLS_SERVICE_NAME: 'state-x', POWERTOOLS_METRICS_NAMESPACE: 'Ns-x' });
    const blobs = await blobsOf(app, () =>
      app.handle(request('PUT', '/v1/sessions/s-1/state/plan', { a: 1 })),
    );
    const [blob, ...others] = named(blobs, 'Requests');
    expect(others).toEqual([]);
    expect(directive(blob).Namespace).toBe('Ns-x');
    expect(directive(blob).Dimensions).toEqual([
      ['service'],
      ['service', 'route'],
      ['service', 'route', 'statusClass'],
    ]);
    expect(directive(blob).Metrics).toEqual([
      { Name: 'Requests', Unit: 'Count' },
      { Name: 'Latency', Unit: 'Milliseconds' },
    ]);
    expect(blob).toMatchObject({
      service: 'state-x',
      route: 'PUT /v1/sessions/{sessionId}/state/{key}',
      statusClass: '2xx',
      Requests: 1,
    });
    expect(blob?.Latency).toBeGreaterThanOrEqual(0);
    expect(JSON.stringify(blobs)).not.toContain('s-1');
    // No problem, no Problems blob.
    expect(named(blobs, 'Problems')).toEqual([]);
  });

  it('defaults: namespace AgentState, service agent-state', async () => {
    const app = lambdaApp();
    const blobs = await blobsOf(app, () => app.handle(request('GET', '/v1/health')));
    const [blob] = named(blobs, 'Requests');
    expect(directive(blob).Namespace).toBe('AgentState');
    expect(blob).toMatchObject({ service: 'agent-state', route: 'GET /v1/health', statusClass: '2xx' });
  });

  it('Problems: one per problem answer, with [service, code] alone', async () => {
    const app = lambdaApp();
    const blobs = await blobsOf(app, () => app.handle(request('GET', '/v1/sessions/s-2/state/absent')));
    const [problem, ...others] = named(blobs, 'Problems');
    expect(others).toEqual([]);
    expect(directive(problem).Dimensions).toEqual([['service', 'code']]);
    expect(directive(problem).Metrics).toEqual([{ Name: 'Problems', Unit: 'Count' }]);
    expect(problem).toMatchObject({ service: 'agent-state', code: 'not-found', Problems: 1 });
    expect(named(blobs, 'Requests')[0]).toMatchObject({
      route: 'GET /v1/sessions/{sessionId}/state/{key}',
      statusClass: '4xx',
    });
  });

  it('the store counters and the probe: [service, outcome]', async () => {
    const app = lambdaApp();
    const base = '/v1/sessions/s-3/lists/log';
    const blobs = await blobsOf(app, async () => {
      await app.handle(request('PUT', base, ['a']));
      // An append whose expected count another append changed: a conflict.
      const answer = await app.handle(request('POST', `${base}/items`, { items: ['b'], expectedCount: 0 }));
      expect(answer.status).toBe(409);
    });
    const [probe] = named(blobs, 'ProbeOutcome');
    expect(directive(probe).Dimensions).toEqual([['service', 'outcome']]);
    expect(probe).toMatchObject({ service: 'agent-state', outcome: 'verified', ProbeOutcome: 1 });
    const [conflict, ...more] = named(blobs, 'ConflictRetries');
    expect(more).toEqual([]);
    expect(directive(conflict).Dimensions).toEqual([['service', 'outcome']]);
    expect(conflict).toMatchObject({ outcome: 'append-conflict', ConflictRetries: 1 });
    expect(named(blobs, 'Problems')[0]).toMatchObject({ code: 'append-conflict' });
  });

  it('every store counter has a metric and an outcome; status classes', () => {
    for (const [counter, { metric, outcome }] of Object.entries(STORE_METRICS)) {
      expect(metric, counter).toMatch(/^[A-Z][A-Za-z]+$/);
      expect(outcome, counter).toMatch(/^[a-z]+(-[a-z]+)*$/);
    }
    expect([200, 304, 404, 503].map(statusClassOf)).toEqual(['2xx', '3xx', '4xx', '5xx']);
  });

  it('none off Lambda', async () => {
    const config = loadConfig({ STORE_BACKEND: 'memory', ALLOW_ANONYMOUS: 'true', LOG_LEVEL: 'SILENT' });
    const app = createApp(config, { driver: createMemoryDriver(), lock: createMemoryLock() });
    expect(app.metrics).toBeUndefined();
    const blobs = await blobsOf(app, () => app.handle(request('GET', '/v1/nope')));
    expect(blobs).toEqual([]);
  });
});

describe('what the metrics cost (docs/deploying.md)', () => {
  it('counts the route values, problem codes and outcomes there are', () => {
    const doc = readFileSync(new URL('../../docs/deploying.md', import.meta.url), 'utf8');
    const keys = ROUTES.flatMap((r) => methodsOf(r).map((m) => `${m} ${r.pattern}`));
    const templates = new Set(ROUTES.map((r) => r.pattern)).size;
    const routes = keys.length + templates + 1;
    const codes = Object.keys(PROBLEMS).length;
    const outcomes = Object.keys(STORE_METRICS).length + PROBE_OUTCOMES.length;
    const total = 2 * (1 + routes + 4 * routes) + codes + outcomes;
    expect(doc).toContain(
      `${routes} route values each: ${keys.length} method-and-template routes (HEAD included), ${templates} \`OPTIONS <template>\`, \`unmatched\``,
    );
    expect(doc).toContain(`| ${codes} problem codes | ${codes} |`);
    expect(doc).toContain(`| ${outcomes} |`);
    expect(doc).toContain(`**${total}: $${(total * 0.3).toFixed(2)} a month**`);
  });
});
