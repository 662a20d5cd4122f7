/**
 * The LangGraph memory store's budgets on a real S3 protocol: the bench's operations
 * (bench/frameworks/langgraph-store.ts) through the typed client and the HTTP API over the s3
 * driver, the S3 front over s3rver, counted by the benchmark's proxy, as `npm run bench` prints
 * them. `search(prefix, { limit: 10 })` is one snapshot of a value page: 1 HTTP call, 1 LIST and
 * 11 GET-class requests (the session's marker, a GET per item; no HEAD: a GET carries the
 * incarnation). The budget is 1 LIST + 10 GET-class: the marker read is the eleventh, kept
 * because it is what makes a deleted memory session gone at once for every reader.
 */
import { describe, expect, inject, it } from 'vitest';
import { type FrameworkRow, runFrameworkBench } from '../../bench/framework-bench.js';
import { langgraphStoreBenchOf } from '../../bench/frameworks/langgraph-store.js';

describe('AgentStateMemoryStore budgets (s3 driver, S3 front over s3rver, counted by the proxy)', () => {
  it('search of 10 is 1 HTTP call, 1 LIST, 11 GET-class; get 1 call; a put 1 call, no LIST', async () => {
    const servers = inject('servers');
    const rows = await runFrameworkBench({
      s3Port: Number(new URL(servers.s3).port),
      bucket: servers.bucket,
      benches: [langgraphStoreBenchOf({ memories: 60, users: 4 })],
      repeat: 3,
    });
    const row = (name: string): FrameworkRow => {
      const found = rows.find((r) => r.operation === name);
      if (!found) throw new Error(`no row ${name}`);
      return found;
    };
    const shape = (r: FrameworkRow) => ({
      http: r.httpCalls,
      list: r.traffic.list,
      getClass: r.traffic.getClass,
      putClass: r.traffic.putClass,
    });
    console.log(rows.map((r) => `${r.operation}: ${JSON.stringify(shape(r))}`).join('\n'));
    expect(shape(row('search (limit 10)'))).toEqual({ http: 1, list: 1, getClass: 11, putClass: 1 });
    expect(shape(row('search (limit 10, offset 50)'))).toEqual({
      http: 1,
      list: 1,
      getClass: 61,
      putClass: 1,
    });
    expect(shape(row('get'))).toEqual({ http: 1, list: 0, getClass: 2, putClass: 0 });
    for (const name of ['put (a new item)', 'put (an item read before)']) {
      const put = shape(row(name));
      expect([put.http, put.list, put.putClass]).toEqual([1, 0, 1]);
      expect(put.getClass).toBeLessThanOrEqual(2);
    }
    // A filter matching one item in three: pages of 20 values, then 40.
    expect(shape(row('search (filter, limit 10, of 60)'))).toEqual({
      http: 2,
      list: 2,
      getClass: 2 + 60,
      putClass: 2,
    });
    const namespaces = shape(row('listNamespaces (5 namespaces)'));
    expect([namespaces.http, namespaces.list]).toEqual([1, 1]);
  });
});
