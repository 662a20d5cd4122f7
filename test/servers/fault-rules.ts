import type http from 'node:http';

/** The fault rules a front holds: each hits matching requests `times` times, or with a `probability`. */
export interface Rule {
  /** Hit each matching request with this probability until reset (then `times` is ignored). */
  probability?: number;
  /** How many requests to hit; default 1. */
  times?: number;
}

export class FaultRules<R extends Rule> {
  private rules: R[] = [];
  /** Faults injected since the front started. */
  injected = 0;

  add(rule: R): void {
    this.rules.push(rule);
  }

  reset(): void {
    this.rules = [];
  }

  /** The first rule matching, if it fires for this request (counted as injected). */
  take(matches: (rule: R) => boolean): R | undefined {
    const rule = this.rules.find(matches);
    if (!rule) return undefined;
    if (rule.probability !== undefined) {
      if (Math.random() >= rule.probability) return undefined;
    } else {
      rule.times = (rule.times ?? 1) - 1;
      if (rule.times <= 0) this.rules = this.rules.filter((r) => r !== rule);
    }
    this.injected++;
    return rule;
  }
}

/** A fault of an object-store front: an error answer, latency, or a connection reset. */
export interface StoreFault extends Rule {
  kind: '500' | '503' | '409' | 'latency' | 'reset';
  ms?: number;
}

/**
 * Applies a front's fault to a request; returns true when the request must go no further. `errors`
 * gives the front's own code and message for each status.
 */
export async function applyFault(
  rule: StoreFault | undefined,
  res: http.ServerResponse,
  errors: Record<'500' | '503' | '409', [code: string, message: string]>,
  send: (res: http.ServerResponse, status: number, code: string, message: string) => void,
): Promise<boolean> {
  if (!rule) return false;
  if (rule.kind === 'latency') {
    await new Promise((r) => setTimeout(r, rule.ms ?? 200));
    return false;
  }
  if (rule.kind === 'reset') res.socket?.destroy();
  else send(res, Number(rule.kind), ...errors[rule.kind]);
  return true;
}
