/**
 * The npm package as a user gets it: `npm pack` (which builds dist/lib/ first; test/package/packed.ts,
 * shared by the package tests), the tarball's file list, an install into an empty project with
 * `--prefer-offline` (only the client's dependencies arrive), the README's client program
 * type-checked there with this repository's tsc and run against a local server, and the client
 * entries' sizes bundled by esbuild.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { createFsDriver } from '../../lib/drivers/fs.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { createApp } from '../../lib/http/app.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { docExample } from '../docs/blocks.js';
import { hsToken } from '../http/harness.js';
import { localBase, startWorkspaceApi } from '../workspaces/api.js';
import { env, installedProject, type Packed, packedTarball, ROOT, rootManifest, run } from './packed.js';

const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
const SECRET = 'pack-test-secret-for-hs256-0123456789';
/** Bundle ceilings: the universal client, and the Node one (workspace snapshots, file transfers). */
const CLIENT_BUNDLE_LIMIT = {
  'agent-state-store/client': 120 * 1024,
  'agent-state-store/client/node': 140 * 1024,
};
/** What the package may depend on: small libraries, none of a cloud SDK, middy, Powertools or jose. */
const ALLOWED_DEPENDENCIES = ['@noble/hashes', 'canonicalize', 'zod'];

/** Every file of lib/ the library build compiles, as paths under dist/lib/ (`.js` and `.d.ts`). */
function libraryOutputs(dir = 'lib'): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return libraryOutputs(full);
    if (!entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts')) return [];
    const out = path.join('dist', full.slice(0, -'.ts'.length));
    return [`${out}.js`, `${out}.d.ts`];
  });
}

describe('npm package: pack, install into a fresh project, use the client', () => {
  let dir: string;
  let project: string;
  let tarball: string;
  let packed: Packed;
  let server: Server;
  let base: string;
  let token: string;
  const timings: string[] = [];
  const timed = async <T>(what: string, f: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    try {
      return await f();
    } finally {
      timings.push(`${what} ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
  };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'pack-test-'));
    ({ tarball, packed } = await timed('npm pack', () => packedTarball()));
    project = await timed('npm install', () => installedProject(tarball, { under: dir }));

    // The local server, in process (memory storage, HS256 tokens).
    const config = loadConfig({ STORE_BACKEND: 'memory', AUTH_JWT_SECRET: SECRET, LOG_LEVEL: 'SILENT' });
    const app = createApp(config, { driver: createMemoryDriver(), lock: createMemoryLock() });
    server = createNodeServer(app.handle, config.BODY_LIMIT_BYTES);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    token = await new SignJWT({ sub: 'alice' })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(new TextEncoder().encode(SECRET));
  });
  afterAll(async () => {
    console.log(`package test: ${timings.join(', ')}`);
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('packs dist/lib/ (.js and .d.ts of every lib/ module), the built console and its bin, CHANGELOG.md, LICENSE, README.md, openapi.json and package.json only', async () => {
    const listed = (await run('tar', ['-tzf', tarball])).stdout.trim().split('\n').sort();
    expect(listed).toEqual(packed.files.map((f) => `package/${f.path}`).sort());
    const expected = [
      ...libraryOutputs(),
      'dist/console/console.css',
      'dist/console/console.js',
      'dist/console/index.html',
      'bin/agent-state-store.mjs',
      'CHANGELOG.md',
      'LICENSE',
      'README.md',
      'openapi.json',
      'package.json',
    ].map((f) => `package/${f}`);
    expect(listed).toEqual(expected.sort());
    for (const file of listed) {
      expect(file).not.toMatch(/^package\/(test|bench|functions|scripts|infra|lib)\//);
      expect(file).not.toMatch(/^package\/dist\/(aws|aliyun|local)\//);
      expect(file).not.toMatch(/^package\/dist\/[^/]+\.mjs$/);
      expect(file).not.toMatch(/\.map$/);
      if (file.endsWith('.ts')) expect(file).toMatch(/\.d\.ts$/);
    }
    console.log(
      `tarball ${packed.filename}: ${listed.length} files, ${(packed.size / 1024).toFixed(1)} KB packed, ${(packed.unpackedSize / 1024).toFixed(1)} KB unpacked`,
    );
  });

  it('installs into an empty project with its dependencies only (no SDK, middy, Powertools, jose)', async () => {
    const lock = JSON.parse(
      await readFile(path.join(project, 'node_modules/.package-lock.json'), 'utf8'),
    ) as {
      packages: Record<string, unknown>;
    };
    const installed = Object.keys(lock.packages).sort();
    console.log(`installed: ${installed.map((p) => p.replace('node_modules/', '')).join(', ')}`);
    // The dependencies have none of their own: the package and they are all that arrives.
    const dependencies = Object.keys((await rootManifest()).dependencies);
    expect(dependencies.filter((name) => !ALLOWED_DEPENDENCIES.includes(name))).toEqual([]);
    const expected = ['agent-state-store', ...dependencies];
    expect(installed).toEqual(expected.map((name) => `node_modules/${name}`).sort());
    const folders = (await readdir(path.join(project, 'node_modules'))).filter((f) => !f.startsWith('.'));
    expect(folders.sort()).toEqual([...new Set(expected.map((name) => name.split('/')[0]))].sort());
    // A server subpath without its optional peer fails at import, naming the package to install.
    const s3 = run(
      process.execPath,
      ['--input-type=module', '-e', "await import('agent-state-store/drivers/s3')"],
      {
        cwd: project,
        env: env(),
      },
    );
    await expect(s3).rejects.toThrow(
      /ERR_MODULE_NOT_FOUND[\s\S]*@aws-sdk\/client-s3|@aws-sdk\/client-s3[\s\S]*ERR_MODULE_NOT_FOUND/,
    );
  });

  it('each framework adapter entry, imported without its framework, throws MissingPeerError naming the package to install', async () => {
    const adapters = [
      ['langgraph', '@langchain/langgraph-checkpoint'],
      ['openai-agents', '@openai/agents-core'],
      ['strands', '@strands-agents/sdk'],
    ] as const;
    for (const [entry, missing] of adapters) {
      const { stdout } = await run(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `await import('agent-state-store/${entry}').then(() => console.log('loaded'), (e) => console.log(e.name, e.missing, e.message))`,
        ],
        { cwd: project, env: env() },
      );
      expect(stdout.trim()).toBe(
        `MissingPeerError ${missing} agent-state-store/${entry} needs the package ${missing}: install it next to agent-state-store (npm install ${missing})`,
      );
    }
  });

  it('type-checks the README client program with the repository tsc (strict, NodeNext) and runs it against a local server', async () => {
    const { code, prints } = docExample('client');
    expect(code).toMatch(/from 'agent-state-store\/client'/);
    expect(prints.length).toBeGreaterThanOrEqual(2);
    await writeFile(path.join(project, 'main.ts'), code);
    // The types are real: calls the API does not take are errors (an unused @ts-expect-error is one too).
    await writeFile(
      path.join(project, 'check.ts'),
      [
        "import { createHttpClient, type HttpSessionStore, PreconditionFailedError } from 'agent-state-store/client';",
        "import { createHttpClient as createNodeClient, type NodeHttpSessionStore } from 'agent-state-store/client/node';",
        "const client: HttpSessionStore = createHttpClient({ baseUrl: 'http://127.0.0.1:1' });",
        '// @ts-expect-error appendList takes the expected count',
        "void client.appendList('s', 'k', [1]);",
        '// @ts-expect-error the base URL is a string',
        'createHttpClient({ baseUrl: 8787 });',
        '// @ts-expect-error files are the Node entry’s',
        'void client.uploadWorkspaceFile;',
        "const onNode: NodeHttpSessionStore = createNodeClient({ baseUrl: 'http://127.0.0.1:1', logger: console });",
        "export const toFile = onNode.downloadWorkspaceToFile('s', 'w', 'out.tar');",
        'export const same: HttpSessionStore = onNode;',
        'export const current = (e: PreconditionFailedError): string | null => e.currentVersion;',
        '',
      ].join('\n'),
    );
    await writeFile(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          lib: ['ES2023'],
          strict: true,
          // The repository's @types/node: nothing but the package is installed in the project.
          typeRoots: [path.join(ROOT, 'node_modules/@types')],
          types: ['node'],
          skipLibCheck: false,
          noEmitOnError: true,
          outDir: 'out',
        },
        files: ['main.ts', 'check.ts'],
      }),
    );
    await timed('tsc', () =>
      run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: project, env: env() }).catch((error) => {
        throw new Error(`tsc failed:\n${error.stdout}${error.stderr}`);
      }),
    );
    const { stdout } = await run(process.execPath, ['out/main.js'], {
      cwd: project,
      env: env({ AGENT_STATE_URL: base, AGENT_STATE_TOKEN: token }),
    });
    expect(stdout.trim().split('\n')).toEqual(prints);
  });

  it('npx agent-state-store workspace push, push after an edit, pull: the tree back byte for byte', async () => {
    // The fs driver behind its signed URLs (workspace snapshots need presigned transfers).
    const root = await mkdtemp(path.join(dir, 'fs-'));
    const api = await startWorkspaceApi(createFsDriver({ root, presign: { baseUrl: () => localBase.url } }));
    try {
      const src = await mkdtemp(path.join(dir, 'tree-'));
      await mkdir(path.join(src, 'src'));
      await writeFile(path.join(src, 'src', 'index.ts'), 'export const answer = 42;\n');
      // Large enough to be cut into chunks: read into a shared buffer, hashed by the worker.
      const big = randomBytes(3 * 1024 * 1024);
      await writeFile(path.join(src, 'model.bin'), big);
      const alice = await hsToken({ sub: 'alice' });
      const cli = (...args: string[]) =>
        run(
          'npx',
          ['--no-install', 'agent-state-store', 'workspace', ...args, '--session', 's1', '--name', 'w'],
          {
            cwd: project,
            env: env({ AGENT_STATE_URL: api.baseUrl, AGENT_STATE_TOKEN: alice }),
          },
        );
      await cli('push', src);
      big.set(randomBytes(64 * 1024), 1024 * 1024);
      await writeFile(path.join(src, 'model.bin'), big);
      const second = (await cli('push', src)).stdout.trim();
      const out = path.join(dir, 'pulled');
      await cli('pull', second, out);
      expect(await readFile(path.join(out, 'model.bin'))).toEqual(big);
      expect(await readFile(path.join(out, 'src', 'index.ts'), 'utf8')).toBe('export const answer = 42;\n');
      expect((await cli('ls')).stdout).toContain(second);
    } finally {
      await api.close();
    }
  });

  it('npx agent-state-store console --api <url> serves the console on 127.0.0.1 and forwards /v1 with the token', async () => {
    const child = spawn('npx', ['--no-install', 'agent-state-store', 'console', '--api', base], {
      cwd: project,
      env: env(),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let printed = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout?.on('data', (chunk: Buffer) => {
          printed += chunk.toString();
          const found = /agent-state console on (http:\/\/127\.0\.0\.1:\d+\/console\/)/.exec(printed);
          if (found) resolve(found[1] as string);
        });
        child.stderr?.on('data', (chunk: Buffer) => {
          printed += chunk.toString();
        });
        child.once('exit', (code) => reject(new Error(`console exited ${code}: ${printed}`)));
      });
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toBe("default-src 'self'; frame-ancestors 'none'");
      const html = await page.text();
      expect(html).toContain('console.js');
      const script = await fetch(`${url}console.js`);
      expect(script.status).toBe(200);
      expect((await script.text()).length).toBeGreaterThan(1000);
      const origin = url.replace('/console/', '');
      const sessions = await fetch(`${origin}/v1/sessions`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(sessions.status).toBe(200);
      // The same answer as the API's own.
      const direct = await fetch(`${base}/v1/sessions`, { headers: { authorization: `Bearer ${token}` } });
      expect(await sessions.json()).toEqual(await direct.json());
      expect((await fetch(`${origin}/v1/sessions`)).status).toBe(401);
      expect(printed).not.toContain(token);
    } finally {
      if (child.pid) process.kill(-child.pid, 'SIGTERM');
    }
  });

  it('bundles each client entry (esbuild, minified, dependencies included, tree-shaken) to at most 120 KB (/client/node 140 KB)', async () => {
    const bundle = async (contents: string) => {
      const result = await build({
        stdin: { contents, resolveDir: project, loader: 'js', sourcefile: 'entry.mjs' },
        bundle: true,
        minify: true,
        treeShaking: true,
        platform: 'node',
        target: 'node20',
        format: 'esm',
        metafile: true,
        write: false,
        logLevel: 'silent',
      });
      const packages = new Set(
        Object.keys(result.metafile.inputs).flatMap((input) => {
          const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
          return m ? [m[1] as string] : [];
        }),
      );
      return { bytes: result.outputFiles[0]?.contents.length ?? 0, packages: [...packages].sort() };
    };
    const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
    for (const subpath of ['agent-state-store/client', 'agent-state-store/client/node'] as const) {
      const entry = await bundle(`export * from '${subpath}';`);
      const used = await bundle(
        `import { createHttpClient } from '${subpath}';\nexport const client = createHttpClient({ baseUrl: 'http://127.0.0.1:8787' });`,
      );
      console.log(
        `${subpath} bundle (esbuild, minified, dependencies included): entry ${kb(entry.bytes)}, createHttpClient alone ${kb(used.bytes)}; packages: ${entry.packages.join(', ')}`,
      );
      expect(entry.bytes, subpath).toBeLessThanOrEqual(CLIENT_BUNDLE_LIMIT[subpath]);
      expect(
        entry.packages.filter(
          (p) => !['@noble/hashes', 'agent-state-store', 'canonicalize', 'zod'].includes(p),
        ),
        subpath,
      ).toEqual([]);
      expect(entry.packages).toContain('agent-state-store');
      if (subpath === 'agent-state-store/client') {
        // docs/client.md states the figure: it may not drift more than 10 % from what is measured.
        const page = await readFile(path.join(ROOT, 'docs/client.md'), 'utf8');
        const stated = Number(/<!-- client-bundle-kb -->([\d.]+)<!--/.exec(page)?.[1]);
        expect(
          Math.abs(stated * 1024 - entry.bytes) / entry.bytes,
          `docs/client.md says ${stated} KB`,
        ).toBeLessThan(0.1);
      }
    }
  });
});
