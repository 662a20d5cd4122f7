/** The one backoff (lib/util/backoff.ts): each policy's ceilings, floor and first pausing attempt. */
import { describe, expect, it, vi } from 'vitest';
import { BACKOFF, backoff, backoffMs } from '../../lib/util/backoff.js';

describe('backoff', () => {
  it('draws from 0 to min(cap, base × 2^attempt)', () => {
    expect(backoffMs(BACKOFF.storeRace, 0, () => 1)).toBe(10);
    expect(backoffMs(BACKOFF.storeRace, 3, () => 1)).toBe(80);
    expect(backoffMs(BACKOFF.storeRace, 10, () => 1)).toBe(400);
    expect(backoffMs(BACKOFF.transient, 4, () => 0.5)).toBe(800);
    expect(backoffMs(BACKOFF.transient, 9, () => 0.999)).toBeCloseTo(1998, 0);
  });

  it('keeps a policy floor and retries at once before its first pausing attempt', () => {
    expect(backoffMs(BACKOFF.lockWait, 0, () => 0)).toBe(5);
    expect(backoffMs(BACKOFF.contended, 2, () => 1)).toBe(0);
    expect(backoffMs(BACKOFF.contended, 3, () => 1)).toBe(8);
    expect(backoffMs(BACKOFF.contended, 12, () => 1)).toBe(100);
  });

  it('sets a timer only for a pause', async () => {
    vi.useFakeTimers();
    try {
      await backoff(BACKOFF.contended, 0);
      let done = false;
      const waiting = backoff(BACKOFF.storeRace, 3).then(() => {
        done = true;
      });
      expect(vi.getTimerCount()).toBe(1);
      await vi.advanceTimersByTimeAsync(80);
      await waiting;
      expect(done).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
