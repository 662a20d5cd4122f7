/** `npm start` as a new user runs it: the built local server, a token from `npm run token`, curl-like calls. */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient } from '../../lib/client/index.js';

const run = promisify(execFile);

describe('npm start (built local server on the embedded default)', () => {
  let dir: string;
  let server: ReturnType<typeof spawn>;
  let base: string;
  const env = () => ({ ...process.env, DATA_DIR: dir, PORT: '0', NODE_OPTIONS: '' });

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'local-server-'));
    await run('node', ['scripts/build.mjs', 'local/server', 'token', 'id']);
    server = spawn('node', ['dist/local/server.mjs'], { env: env(), stdio: ['ignore', 'pipe', 'inherit'] });
    base = await new Promise<string>((resolve, reject) => {
      server.stdout?.on('data', (chunk: Buffer) => {
        const match = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(chunk.toString());
        if (match) resolve(match[1] as string);
      });
      server.on('exit', (code) => reject(new Error(`server exited ${code}`)));
    });
  });
  afterAll(async () => {
    server.kill();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves health, refuses no token, stores and reads state with a token from npm run token', async () => {
    expect((await fetch(`${base}/v1/health`)).status).toBe(200);
    expect((await fetch(`${base}/v1/sessions`)).status).toBe(401);
    const token = (await run('node', ['dist/token.mjs', 'alice'], { env: env() })).stdout.trim();
    const auth = { authorization: `Bearer ${token}` };
    const id = (await run('node', ['dist/id.mjs', 'sandbox/session/1'])).stdout.trim();
    expect(id).toBe('~c2FuZGJveC9zZXNzaW9uLzE');
    const put = await fetch(`${base}/v1/sessions/${id}/state/plan`, {
      method: 'PUT',
      headers: auth,
      body: '{"step":1}',
    });
    expect(put.status).toBe(200);
    expect(await (await fetch(`${base}/v1/sessions/${id}/state/plan`, { headers: auth })).json()).toEqual({
      step: 1,
    });
    const listed = (await (await fetch(`${base}/v1/sessions`, { headers: auth })).json()) as {
      sessions: Array<{ sessionId: string }>;
    };
    expect(listed.sessions.map((s) => s.sessionId)).toEqual(['sandbox/session/1']);
  });

  it('keeps workspaces too: the server answers the presigned URLs of its fs storage', async () => {
    const token = (await run('node', ['dist/token.mjs', 'alice'], { env: env() })).stdout.trim();
    const alice = createHttpClient({ baseUrl: base, token });
    const data = new Uint8Array(Buffer.from('a workspace '.repeat(10_000)));
    const info = await alice.uploadWorkspace('ws', 'repo.tar', data);
    expect(info).toMatchObject({ name: 'repo.tar', contentEncoding: 'gzip' });
    expect(info.size).toBeLessThan(data.length / 10);
    const found = await alice.getWorkspace('ws', 'repo.tar');
    expect(found?.status === 'ready' && found.download.url.startsWith(`${base}/v1/blobs/`)).toBe(true);
    expect(Buffer.from((await alice.downloadWorkspace('ws', 'repo.tar')) ?? [])).toEqual(Buffer.from(data));
    // A forged URL is refused.
    expect((await fetch(`${base}/v1/blobs/e30.AAAA`)).status).toBe(403);
  });
});
