// Bundles the entry points with esbuild (target node20, so one bundle runs on Node 20 here and on
// Node 22/24 in the clouds), each with a linked source map beside it (`<bundle>.map`, mappings only:
// `node --enable-source-maps`, which the functions' NODE_OPTIONS set, names the files under lib/ in
// stack traces), and compiles the library (`lib` -> dist/lib/: ES modules and .d.ts,
// what the npm package ships) with `tsc -p tsconfig.lib.json`. `node scripts/build.mjs [names...]`
// builds some (`lib` is the library); no names builds all. Prints every file it wrote, with sizes,
// on stderr (stdout stays the built script's: `TOKEN=$(npm run -s token -- alice)` holds the token
// only); `--quiet` prints nothing but errors.
import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { build } from 'esbuild';

const ENTRIES = {
  'aws/api': 'functions/aws/api.ts',
  // The scheduled sweep (lib/lifecycle/sweep.ts), on each cloud.
  'aws/sweep': 'functions/aws/sweep.ts',
  'aliyun/api': 'functions/aliyun/api.ts',
  'aliyun/sweep': 'functions/aliyun/sweep.ts',
  // The ROS custom resource that puts the bucket's lifecycle rules (in the same code package).
  'aliyun/lifecycle': 'functions/aliyun/lifecycle.ts',
  'local/server': 'functions/local/server.ts',
  token: 'scripts/token.ts',
  id: 'scripts/id.ts',
  demo: 'scripts/demo.ts',
  openapi: 'scripts/openapi.ts',
  infra: 'scripts/infra.ts',
  lifecycle: 'scripts/lifecycle.ts',
  bootstrap: 'scripts/bootstrap.ts',
  adopt: 'scripts/adopt.ts',
  // The renderer osls calls at package time (infra/aws/deployment.cjs).
  'sls-deployment': 'scripts/sls-deployment.ts',
};
/** The session console (console/): a browser bundle, its style sheet and page, in dist/console/. */
const CONSOLE = 'console';
const CONSOLE_DIR = 'dist/console';
/** The library: tsc output of lib/, the package's files (see `exports` in package.json). */
const LIB = 'lib';
const LIB_DIR = 'dist/lib';

const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const quiet = process.argv.includes('--quiet');
const names = wanted.length > 0 ? wanted : [...Object.keys(ENTRIES), LIB, CONSOLE];
const unknown = names.filter((n) => n !== LIB && n !== CONSOLE && !(n in ENTRIES));
if (unknown.length > 0) {
  console.error(
    `unknown build target ${unknown.join(', ')}; known: ${[...Object.keys(ENTRIES), LIB].join(', ')}`,
  );
  process.exit(1);
}

const kb = (bytes) => `${(bytes / 1024).toFixed(1).padStart(8)} KB`;
/** What was written, printed at the end: [path, bytes, note]. */
const lines = [];

/** Written whole, then renamed: a process starting a bundle never reads a half-written one. */
async function writeWhole(file, contents) {
  await mkdir(path.dirname(file), { recursive: true });
  const partial = `${file}.${process.pid}.tmp`;
  await writeFile(partial, contents);
  await rename(partial, file);
}

/**
 * Bundles split into an entry and chunks (`chunks/` beside it, all in the code package), so what a
 * module reaches only through a dynamic `import()` loads only when used: the FC handler's engines
 * (Redis, MySQL) and their client libraries. (Lambda's bundle is split by serverless-esbuild.)
 */
const SPLIT = new Set(['aliyun/api', 'aliyun/sweep']);

async function bundle(name) {
  const split = SPLIT.has(name);
  const { outputFiles } = await build({
    ...(split
      ? {
          entryPoints: { [path.basename(name)]: ENTRIES[name] },
          outdir: `dist/${path.dirname(name)}`,
          splitting: true,
          chunkNames: `chunks/${path.basename(name)}-[name]-[hash]`,
          outExtension: { '.js': '.mjs' },
        }
      : { entryPoints: [ENTRIES[name]], outfile: `dist/${name}.mjs` }),
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    minify: name.includes('/api') || name.includes('/sweep'),
    // Linked (a sourceMappingURL comment), without the sources' text: stack traces need only the
    // mappings, and the map stays a fraction of the bundle.
    sourcemap: 'linked',
    sourcesContent: false,
    // ali-oss pulls proxy-agent lazily; it is never used here.
    external: ['proxy-agent'],
    // iconv-lite (through ali-oss's urllib, about 480 KiB) replaced by a TextDecoder shim: OSS
    // answers UTF-8 (scripts/shims/iconv-lite.cjs; docs/deploying.md, "Bundle sizes").
    ...(name.startsWith('aliyun/') ? { alias: { 'iconv-lite': './scripts/shims/iconv-lite.cjs' } } : {}),
    // ESM bundles of CommonJS packages need require.
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
    logLevel: 'warning',
    write: false,
  });
  for (const file of outputFiles) {
    await writeWhole(file.path, file.contents);
    const note = file.path.endsWith('.map')
      ? 'source map'
      : file.path.includes('/chunks/')
        ? 'chunk'
        : 'bundle';
    lines.push([path.relative(process.cwd(), file.path), file.contents.length, note]);
  }
  if (split) {
    // Chunks of an earlier build that this one no longer emits are not shipped.
    const chunks = path.resolve(`dist/${path.dirname(name)}/chunks`);
    const emitted = new Set(outputFiles.map((f) => f.path));
    const prefix = `${path.basename(name)}-`;
    for (const f of await readdir(chunks).catch(() => []))
      if (f.startsWith(prefix) && !emitted.has(path.join(chunks, f)))
        await rm(path.join(chunks, f), { force: true });
  }
}

/** The console for browsers: minified, no source map, no eval (its CSP has none), the page as written. */
async function consoleFiles() {
  const { outputFiles } = await build({
    entryPoints: { console: 'console/app.ts', 'console-style': 'console/console.css' },
    outdir: CONSOLE_DIR,
    bundle: true,
    platform: 'browser',
    target: ['chrome120', 'firefox120', 'safari17'],
    format: 'esm',
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
    write: false,
  });
  const files = outputFiles.map((f) => [f.path.replace(/console-style\.css$/, 'console.css'), f.contents]);
  files.push([path.resolve(CONSOLE_DIR, 'index.html'), await readFile('console/index.html')]);
  for (const [file, contents] of files) {
    await writeWhole(file, contents);
    lines.push([path.relative(process.cwd(), file), contents.length, 'console']);
  }
}

async function filesUnder(dir) {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath ?? e.path, e.name)));
}

function run(command, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0
        ? resolve()
        : reject(new Error(`${path.basename(args[0])} ${args.slice(1).join(' ')}: exit ${code ?? signal}`)),
    );
  });
}

/**
 * tsc into a staging folder of this process, then each file renamed into dist/lib/ (whole files
 * only, as for the bundles; concurrent builds write the same files), then files no longer emitted
 * (a module removed from lib/) are deleted, so the package never ships stale modules.
 */
async function library() {
  const staging = `dist/.lib-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  try {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    await run(process.execPath, [tsc, '-p', 'tsconfig.lib.json', '--outDir', staging]);
    const emitted = await filesUnder(staging);
    let bytes = 0;
    for (const file of emitted) {
      const to = path.join(LIB_DIR, file);
      await mkdir(path.dirname(to), { recursive: true });
      bytes += (await stat(path.join(staging, file))).size;
      await rename(path.join(staging, file), to);
    }
    const keep = new Set(emitted);
    for (const file of await filesUnder(LIB_DIR)) {
      if (keep.has(file) || file.endsWith('.tmp')) continue;
      await rm(path.join(LIB_DIR, file), { force: true });
      await rmdir(path.dirname(path.join(LIB_DIR, file))).catch(() => {}); // when it became empty
    }
    const js = emitted.filter((f) => f.endsWith('.js')).length;
    const dts = emitted.filter((f) => f.endsWith('.d.ts')).length;
    lines.push([`${LIB_DIR}/`, bytes, `library: ${js} .js + ${dts} .d.ts (tsc -p tsconfig.lib.json)`]);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

const results = await Promise.allSettled(
  names.map((name) => (name === LIB ? library() : name === CONSOLE ? consoleFiles() : bundle(name))),
);
lines.sort((a, b) => a[0].localeCompare(b[0]));
if (!quiet) for (const [file, bytes, note] of lines) console.error(`${file.padEnd(28)}${kb(bytes)}  ${note}`);
const failed = results.filter((r) => r.status === 'rejected');
for (const { reason } of failed) console.error(`build failed: ${reason?.message ?? reason}`);
if (failed.length > 0) process.exit(1);
