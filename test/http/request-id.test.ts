/**
 * X-Request-Id through every adapter: a client's valid id (1 to 128 visible ASCII characters) is
 * kept, echoed and logged; anything else is replaced by a generated one; the platform's own id is
 * logged beside it (`platformRequestId`).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { type ApiHarness, apiGatewayHarness, functionComputeHarness, nodeHarness } from './harness.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const VISIBLE = Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i)).join('');

const harnesses = [
  { make: nodeHarness, platformId: false },
  { make: apiGatewayHarness, platformId: true },
  { make: functionComputeHarness, platformId: true },
];

describe.each(harnesses)('X-Request-Id through $make.name', ({ make, platformId }) => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await make({ driver: createMemoryDriver(), lock: createMemoryLock() }, { LOG_LEVEL: 'INFO' });
  });
  afterAll(() => api.close());

  /** The answer's X-Request-Id and the request's log line, for a request sending `sent` (or none). */
  async function idsOf(sent?: string) {
    const chunks: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      chunks.push(String(chunk));
      return true;
    });
    let answer: Awaited<ReturnType<ApiHarness['call']>>;
    try {
      answer = await api.call(null, 'GET', '/v1/health', {
        raw: true,
        headers: sent === undefined ? {} : { 'X-Request-Id': sent },
      });
    } finally {
      spy.mockRestore();
    }
    const lines = chunks
      .join('')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.message === 'request');
    expect(lines).toHaveLength(1);
    expect(answer.status).toBe(200);
    return { echoed: answer.headers['x-request-id'], line: lines[0] as Record<string, unknown> };
  }

  it.each([
    ['an id of visible ASCII', 'client-1:a/b=c'],
    ['every visible ASCII character', VISIBLE],
    ['128 characters', 'x'.repeat(128)],
  ])('keeps %s, echoes it and logs it', async (_, sent) => {
    const { echoed, line } = await idsOf(sent);
    expect(echoed).toBe(sent);
    expect(line.requestId).toBe(sent);
  });

  it.each([
    ['129 characters', 'x'.repeat(129)],
    ['a control character', 'a\tb'],
    ['a space', 'a b'],
    ['a character beyond ASCII', 'caf\u00e9'],
    ['an empty one', ''],
    ['none', undefined],
  ])('replaces %s with a generated id', async (_, sent) => {
    const { echoed, line } = await idsOf(sent);
    expect(echoed).toMatch(UUID);
    expect(line.requestId).toBe(echoed);
  });

  it(platformId ? "logs the platform's id beside it" : 'logs no platform id (there is none)', async () => {
    const { line } = await idsOf('client-2');
    if (platformId) {
      expect(line.platformRequestId).toMatch(UUID);
      expect(line.platformRequestId).not.toBe('client-2');
    } else expect(line).not.toHaveProperty('platformRequestId');
  });
});

describe('X-Request-Id in events only a platform sends', () => {
  it('a control character below the tab (API Gateway and FC pass it through): replaced', async () => {
    for (const make of [apiGatewayHarness, functionComputeHarness]) {
      const api = await make({ driver: createMemoryDriver(), lock: createMemoryLock() });
      const answer = await api.call(null, 'GET', '/v1/health', { headers: { 'x-request-id': 'a\u0001b' } });
      expect(answer.headers['x-request-id'], make.name).toMatch(UUID);
    }
  });
});
