/**
 * `guarded` (lib/http/adapters/guard.ts): what an adapter's answer throws becomes the request's
 * problem, and an internal one is reported once, in one shape, with or without the platform's id.
 */
import { describe, expect, it, vi } from 'vitest';
import { ValidationError } from '../../lib/contract/errors.js';
import { guarded, type OnError } from '../../lib/http/adapters/guard.js';

describe('guarded', () => {
  it('reports an internal error once, as (error, requestId, platformRequestId), the platform id undefined when absent', async () => {
    const boom = new Error('boom');
    const onError = vi.fn<OnError>();
    const withPlatform = await guarded({ requestId: 'r1', platformRequestId: 'p1' }, onError, () =>
      Promise.reject(boom),
    );
    const without = await guarded({ requestId: 'r2' }, onError, () => Promise.reject(boom));
    expect(onError.mock.calls).toStrictEqual([
      [boom, 'r1', 'p1'],
      [boom, 'r2', undefined],
    ]);
    for (const [answer, id] of [
      [withPlatform, 'r1'],
      [without, 'r2'],
    ] as const) {
      expect(answer).toMatchObject({ status: 500, headers: { 'x-request-id': id } });
    }
  });

  it("answers a client's error as its problem without reporting it, and passes an answer through", async () => {
    const onError = vi.fn<OnError>();
    const refused = await guarded({ requestId: 'r3' }, onError, () =>
      Promise.reject(new ValidationError('body', 'not JSON')),
    );
    expect(refused).toMatchObject({ status: 400, headers: { 'x-request-id': 'r3' } });
    expect(await guarded({ requestId: 'r4' }, onError, async () => 'answer')).toBe('answer');
    expect(onError).not.toHaveBeenCalled();
  });
});
