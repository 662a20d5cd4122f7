/**
 * The library as the package exposes it: the build in dist/lib/, imported by the package's own name
 * (a package resolves its own `exports`), as a user of the installed package imports it. The
 * README's library example runs as written on Node 20, and each subpath loads only what it needs:
 * every module Node resolves (a loader hook) and every CommonJS module it loads (`require.cache`)
 * is recorded, and the packages among them compared.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docExample } from '../docs/blocks.js';
import { exportSurface } from './export-surface.js';
import { packedTarball } from './packed.js';

const run = promisify(execFile);
const env = () => ({ ...process.env, NODE_OPTIONS: '' });

/** The package a module path or URL belongs to (`@scope/name` or `name`), or null for our own. */
function packageOf(file: string): string | null {
  const at = file.lastIndexOf('/node_modules/');
  if (at < 0) return null;
  const [first, second] = file.slice(at + '/node_modules/'.length).split('/');
  return first?.startsWith('@') ? `${first}/${second}` : (first ?? null);
}

describe('the library through the package exports (dist/lib)', () => {
  // Under the repository (dist/ is ignored by git), so that `agent-state-store/...` names this package.
  let dir: string;

  beforeAll(async () => {
    // The build of this run's tarball (its prepack), not a second build racing it over dist/lib/.
    await packedTarball();
    dir = await mkdtemp(path.join(process.cwd(), 'dist', '.package-test-'));
    await writeFile(
      path.join(dir, 'hooks.mjs'),
      [
        "import { appendFileSync } from 'node:fs';",
        'export async function resolve(specifier, context, next) {',
        '  const result = await next(specifier, context);',
        "  appendFileSync(process.env.RESOLVED_LOG, result.url + '\\n');",
        '  return result;',
        '}',
      ].join('\n'),
    );
    await writeFile(
      path.join(dir, 'register.mjs'),
      "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n",
    );
    await writeFile(
      path.join(dir, 'load.mjs'),
      [
        "import { createRequire } from 'node:module';",
        'for (const specifier of process.argv.slice(2)) await import(specifier);',
        'console.log(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('every exports entry resolves and exports the recorded names (test/package/exports.json)', async () => {
    const surface = await exportSurface(process.cwd());
    if (process.env.RECORD_EXPORTS === '1')
      await writeFile('test/package/exports.json', `${JSON.stringify(surface, null, 2)}\n`);
    expect(surface).toEqual(JSON.parse(await readFile('test/package/exports.json', 'utf8')));
    // A TypeScript program over every entry's .d.ts: slow on a busy 2-core machine.
  });

  it('an error class has one definition: instanceof holds across the entries', async () => {
    const [client, clientNode, store, root] = await Promise.all([
      import(path.join(process.cwd(), 'dist/lib/entries/client.js')),
      import(path.join(process.cwd(), 'dist/lib/entries/client-node.js')),
      import(path.join(process.cwd(), 'dist/lib/entries/store.js')),
      import(path.join(process.cwd(), 'dist/lib/index.js')),
    ]);
    for (const name of [
      'ValidationError',
      'FencedError',
      'LockConflictError',
      'StoreError',
      'CommitMismatchError',
    ]) {
      expect(client[name], name).toBe(store[name]);
      expect(clientNode[name], name).toBe(store[name]);
      expect(root[name], name).toBe(store[name]);
    }
    expect(new client.FencedError(1, 2)).toBeInstanceOf(store.StoreError);
  });

  it('runs the README library example as written, on the fs driver in a temporary folder', async () => {
    const { code, prints } = docExample('library');
    expect(code).toMatch(/from 'agent-state-store\/store'/);
    expect(prints.length).toBeGreaterThanOrEqual(3);
    const file = path.join(dir, 'example.mjs');
    await writeFile(file, code);
    const cwd = await mkdtemp(path.join(tmpdir(), 'readme-library-'));
    try {
      const { stdout } = await run(process.execPath, [file], { cwd, env: env() });
      expect(stdout.trim().split('\n')).toEqual(prints);
    } finally {
      await rm(cwd, { recursive: true, force: true });
    }
  });

  /** The packages Node loads to import these specifiers. */
  async function packagesLoaded(...specifiers: string[]): Promise<string[]> {
    const log = path.join(dir, `resolved-${Math.random().toString(36).slice(2)}.log`);
    await writeFile(log, '');
    const { stdout } = await run(
      process.execPath,
      ['--import', path.join(dir, 'register.mjs'), path.join(dir, 'load.mjs'), ...specifiers],
      { env: { ...env(), RESOLVED_LOG: log } },
    );
    const resolved = (await readFile(log, 'utf8')).split('\n').filter(Boolean);
    const required = JSON.parse(stdout.trim().split('\n').at(-1) as string) as string[];
    expect(resolved.some((url) => url.includes('/dist/lib/'))).toBe(true);
    const names = [...resolved, ...required].map(packageOf).filter((n): n is string => n !== null);
    return [...new Set(names)].sort();
  }

  it('store + drivers/s3 loads the AWS SDK and not ali-oss', async () => {
    const loaded = await packagesLoaded('agent-state-store/store', 'agent-state-store/drivers/s3');
    expect(loaded).toContain('@aws-sdk/client-s3');
    expect(loaded).not.toContain('ali-oss');
    expect(loaded).not.toContain('@aws-sdk/client-dynamodb');
  });

  it('store + drivers/oss loads ali-oss and no AWS SDK', async () => {
    const loaded = await packagesLoaded('agent-state-store/store', 'agent-state-store/drivers/oss');
    expect(loaded).toContain('ali-oss');
    expect(loaded.filter((n) => n.startsWith('@aws-sdk/') || n.startsWith('@smithy/'))).toEqual([]);
  });

  it('lock/dynamodb loads the DynamoDB client only', async () => {
    const loaded = await packagesLoaded('agent-state-store/lock/dynamodb');
    expect(loaded).toContain('@aws-sdk/client-dynamodb');
    expect(loaded).not.toContain('@aws-sdk/client-s3');
    expect(loaded).not.toContain('ali-oss');
  });

  it('the clients, and the store with the embedded drivers and lock, load only canonicalize, @noble/hashes and zod', async () => {
    const allowed = ['@noble/hashes', 'canonicalize', 'zod'];
    for (const specifiers of [
      ['agent-state-store/client'],
      ['agent-state-store/client/node'],
      [
        'agent-state-store/store',
        'agent-state-store/drivers/fs',
        'agent-state-store/drivers/memory',
        'agent-state-store/lock/memory',
      ],
    ]) {
      const loaded = await packagesLoaded(...specifiers);
      expect(
        loaded.filter((n) => !allowed.includes(n)),
        specifiers.join(' + '),
      ).toEqual([]);
    }
  });

  it('http loads jose and Powertools, no SDK and no middy (that is http/apigw)', async () => {
    const loaded = await packagesLoaded('agent-state-store/http');
    expect(loaded).toEqual(expect.arrayContaining(['jose', '@aws-lambda-powertools/logger']));
    expect(loaded.filter((n) => n.startsWith('@aws-sdk/') || n === 'ali-oss' || n === '@middy/core')).toEqual(
      [],
    );
    expect(await packagesLoaded('agent-state-store/http/apigw')).toContain('@middy/core');
  });
});
