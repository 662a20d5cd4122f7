/**
 * Every block of the README and docs/ marked `sh run` or `ts run` runs as written against a local
 * server started for it (fs storage in a temporary folder, HS256 tokens, the in-process lock), and
 * prints what its `→` comments say. TypeScript blocks are type-checked first (strict, NodeNext),
 * with `agent-state-store/...` resolved to this repository's sources through the package's own
 * `exports`, then bundled by esbuild and run by Node in a temporary folder. Shell blocks run with
 * bash in the project's root, where `npm run -s token` signs with the server's secret.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { build, type Plugin } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { createFsDriver } from '../../lib/drivers/fs.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { createApp } from '../../lib/http/app.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { hsToken, SECRET } from '../http/harness.js';
import { type DocBlock, docBlocks, printedAs } from './blocks.js';

const run = promisify(execFile);
const ROOT = process.cwd();
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
/**
 * Where the blocks are written: inside the project, so their packages resolve from its
 * node_modules, in a folder of this process's own that nothing else writes or cleans.
 */
const WORK = path.join(ROOT, 'dist', `docs-blocks-${process.pid}`);

/** The package's subpaths and the source file each one's build comes from (`exports` in package.json). */
function packageSources(): Record<string, string> {
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
    name: string;
    exports: Record<string, string | { types: string }>;
  };
  const sources: Record<string, string> = {};
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    if (typeof target === 'string') continue;
    const source = target.types.replace(/^\.\/dist\/lib\//, 'lib/').replace(/\.d\.ts$/, '.ts');
    sources[subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`] = path.join(ROOT, source);
  }
  return sources;
}

/** esbuild: the package's own name resolves to its sources; every other package stays external. */
function ownSources(sources: Record<string, string>): Plugin {
  return {
    name: 'own-sources',
    setup(b) {
      b.onResolve({ filter: /^agent-state-store(\/.*)?$/ }, (args) => {
        const file = sources[args.path];
        return file ? { path: file } : { errors: [{ text: `${args.path} is not an export of the package` }] };
      });
    },
  };
}

/** The environment without npm's own variables (npm_config_* would point npm at this run). */
const cleanEnv = (extra: Record<string, string>) => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_'))),
  NODE_OPTIONS: '',
  ...extra,
});

/** A local server as `npm start` runs it: fs storage in its own folder, presigned transfers answered. */
async function localServer() {
  const dir = await mkdtemp(path.join(tmpdir(), 'docs-server-'));
  const config = loadConfig({
    STORE_BACKEND: 'fs',
    DATA_DIR: dir,
    AUTH_JWT_SECRET: SECRET,
    LOG_LEVEL: 'SILENT',
  });
  let baseUrl = '';
  const driver = createFsDriver({ root: dir, presign: { baseUrl: () => baseUrl } });
  const app = createApp(config, { driver, lock: createMemoryLock() });
  const blobs = driver.serveBlob && { serveBlob: driver.serveBlob, limitBytes: 64 * 1024 * 1024 };
  const server = createNodeServer(app.handle, config.BODY_LIMIT_BYTES, blobs);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** `README.md:31` as a file name. */
const fileOf = (block: DocBlock) => block.where.replace(/[^A-Za-z0-9]+/g, '-');

/** What a block printed, checked line by line against its `→` comments. */
function expectPrinted(block: DocBlock, stdout: string) {
  const lines = stdout.trimEnd().split('\n');
  const report = `${block.where} printed:\n${stdout}`;
  expect(lines.length, report).toBe(block.prints.length);
  block.prints.forEach((expected, i) => {
    expect(printedAs(lines[i] ?? '', expected), `${report}\nline ${i + 1} should be ${expected}`).toBe(true);
  });
}

const blocks = docBlocks();
const tsBlocks = blocks.filter((b) => b.lang === 'ts');
const sources = packageSources();

describe('the docs: every block marked to run', () => {
  beforeAll(async () => {
    await rm(WORK, { recursive: true, force: true });
    await mkdir(WORK, { recursive: true });
    await writeFile(path.join(WORK, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    await Promise.all(tsBlocks.map((b) => writeFile(path.join(WORK, `${fileOf(b)}.ts`), b.code)));
  });
  afterAll(() => rm(WORK, { recursive: true, force: true }));

  it('finds the README walkthrough, the client, the library and each framework', () => {
    const where = blocks.map((b) => `${b.where.split(':')[0]} ${b.lang}`);
    expect(where.filter((w) => w === 'README.md sh')).toHaveLength(1);
    expect(where.filter((w) => w === 'README.md ts').length).toBeGreaterThanOrEqual(2);
    expect(where.filter((w) => w === 'docs/frameworks.md ts').length).toBeGreaterThanOrEqual(3);
    for (const b of blocks) expect(b.prints.length, `${b.where} claims no output`).toBeGreaterThan(0);
  });

  it('type-checks every TypeScript block (strict, NodeNext), the package resolved to its sources', async () => {
    const paths = Object.fromEntries(Object.entries(sources).map(([name, file]) => [name, [file]]));
    const tsconfig = JSON.parse(readFileSync('tsconfig.json', 'utf8')) as { compilerOptions: object };
    await writeFile(
      path.join(WORK, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          ...tsconfig.compilerOptions,
          noEmit: true,
          paths,
          typeRoots: [path.join(ROOT, 'node_modules/@types')],
        },
        files: tsBlocks.map((b) => `${fileOf(b)}.ts`),
      }),
    );
    await run(process.execPath, [TSC, '-p', path.join(WORK, 'tsconfig.json')], { cwd: WORK }).catch(
      (error) => {
        throw new Error(`tsc found errors in the docs' blocks:\n${error.stdout}${error.stderr}`);
      },
    );
  });

  for (const block of blocks)
    it(`${block.where} (${block.lang}) runs as written and prints what it says`, async () => {
      const server = await localServer();
      const cwd = await mkdtemp(path.join(tmpdir(), 'docs-block-'));
      try {
        const env = cleanEnv({
          AGENT_STATE_URL: server.baseUrl,
          AGENT_STATE_TOKEN: await hsToken({ sub: 'alice' }, '10m'),
          AUTH_JWT_SECRET: SECRET,
        });
        let stdout: string;
        if (block.lang === 'sh') {
          ({ stdout } = await run('bash', ['-euo', 'pipefail', '-c', block.code], {
            cwd: ROOT,
            env,
          }));
        } else {
          const outfile = path.join(WORK, `${fileOf(block)}.mjs`);
          await build({
            entryPoints: [path.join(WORK, `${fileOf(block)}.ts`)],
            outfile,
            bundle: true,
            platform: 'node',
            format: 'esm',
            target: 'node20',
            packages: 'external',
            plugins: [ownSources(sources)],
            logLevel: 'error',
          });
          ({ stdout } = await run(process.execPath, [outfile], { cwd, env }));
        }
        expectPrinted(block, stdout);
      } finally {
        await server.close();
        await rm(cwd, { recursive: true, force: true });
      }
    });

  it('a block printing something else fails (the check can fail)', () => {
    const block: DocBlock = {
      where: 'x.md:1',
      lang: 'ts',
      name: undefined,
      code: '',
      prints: ['{"a":"…"}', '2'],
    };
    expect(() => expectPrinted(block, '{"a":"b"}\n3\n')).toThrow();
    expect(() => expectPrinted(block, '{"a":"b"}\n')).toThrow();
    expect(() => expectPrinted(block, '{"a":"b"}\n2\n')).not.toThrow();
  });
});
