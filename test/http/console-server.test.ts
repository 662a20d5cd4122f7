/**
 * The console's servers (lib/console/serve.ts): its files with the CSP, and the loopback server of
 * `agent-state-store console`, which forwards only GET and HEAD of /v1 to the API, Authorization
 * relayed.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP, startConsoleServer } from '../../lib/console/serve.js';

let dir: string;
let api: http.Server;
let apiUrl: string;
const seen: Array<{ method?: string; url?: string; authorization?: string; cookie?: string }> = [];
let proxy: Awaited<ReturnType<typeof startConsoleServer>>;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'console-files-'));
  await writeFile(path.join(dir, 'index.html'), '<!doctype html><title>console</title>');
  await writeFile(path.join(dir, 'console.js'), 'export {};');
  api = http.createServer((req, res) => {
    seen.push({
      method: req.method,
      url: req.url,
      authorization: req.headers.authorization,
      cookie: req.headers.cookie,
    });
    res.writeHead(200, { 'content-type': 'application/json', etag: '"e1"', 'set-cookie': 'x=1' });
    res.end(req.method === 'HEAD' ? undefined : JSON.stringify({ ok: true }));
  });
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
  apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
  proxy = await startConsoleServer({ api: apiUrl, dir });
});
afterAll(async () => {
  await new Promise((r) => proxy.server.close(r));
  await new Promise((r) => api.close(r));
  await rm(dir, { recursive: true, force: true });
});

describe('agent-state-store console: the loopback server', () => {
  it('listens on 127.0.0.1 only and serves the console with its CSP', async () => {
    expect((proxy.server.address() as AddressInfo).address).toBe('127.0.0.1');
    expect(proxy.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/console\/$/);
    const page = await fetch(proxy.url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toBe("default-src 'self'; frame-ancestors 'none'");
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await page.text()).toContain('<title>console</title>');
    const script = await fetch(`${proxy.url}console.js`);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    for (const bad of ['..%2Fsecret.js', '.hidden.js', 'nothing.js', 'a/b.js'])
      expect((await fetch(`${proxy.url}${bad}`)).status, bad).toBe(404);
    const root = await fetch(proxy.url.replace('/console/', '/'), { redirect: 'manual' });
    expect(root.headers.get('location')).toBe('/console/');
  });

  it('forwards GET and HEAD of /v1 with Authorization, nothing else, and no cookie either way', async () => {
    seen.length = 0;
    const base = proxy.url.replace('/console/', '');
    const got = await fetch(`${base}/v1/sessions?limit=5`, {
      headers: { authorization: 'Bearer t0k3n', cookie: 'c=1' },
    });
    expect(got.status).toBe(200);
    expect(await got.json()).toEqual({ ok: true });
    expect(got.headers.get('etag')).toBe('"e1"');
    expect(got.headers.get('set-cookie')).toBeNull();
    expect(got.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    const head = await fetch(`${base}/v1/sessions/s`, {
      method: 'HEAD',
      headers: { authorization: 'Bearer t0k3n' },
    });
    expect(head.status).toBe(200);
    for (const method of ['POST', 'PUT', 'DELETE'])
      expect((await fetch(`${base}/v1/sessions/s/lock`, { method })).status, method).toBe(405);
    expect((await fetch(`${base}/elsewhere`)).status).toBe(404);
    expect(seen).toEqual([
      { method: 'GET', url: '/v1/sessions?limit=5', authorization: 'Bearer t0k3n', cookie: undefined },
      { method: 'HEAD', url: '/v1/sessions/s', authorization: 'Bearer t0k3n', cookie: undefined },
    ]);
  });

  it('answers 502 when the API cannot be reached, and refuses an API that is not http(s)', async () => {
    const dead = await startConsoleServer({ api: 'http://127.0.0.1:1', dir });
    try {
      const got = await fetch(`${dead.url.replace('/console/', '')}/v1/sessions`);
      expect(got.status).toBe(502);
      expect(await got.text()).not.toContain('Bearer');
    } finally {
      await new Promise((r) => dead.server.close(r));
    }
    await expect(startConsoleServer({ api: 'file:///etc/passwd', dir })).rejects.toThrow('http(s)');
  });
});
