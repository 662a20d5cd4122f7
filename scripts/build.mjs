// Bundles the entry points with esbuild (target node20, so one bundle runs on Node 20 here and on
// Node 22/24 in the clouds). `node scripts/build.mjs [names...]` builds some; no names builds all.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

const ENTRIES = {
  'aws/api': 'functions/aws/api.ts',
  'aliyun/api': 'functions/aliyun/api.ts',
  'local/server': 'functions/local/server.ts',
  token: 'scripts/token.ts',
  id: 'scripts/id.ts',
  demo: 'scripts/demo.ts',
  openapi: 'scripts/openapi.ts',
  infra: 'scripts/infra.ts',
  lifecycle: 'scripts/lifecycle.ts',
};

const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const names = wanted.length > 0 ? wanted : Object.keys(ENTRIES);
await Promise.all(
  names.map(async (name) => {
    const { outputFiles } = await build({
      entryPoints: [ENTRIES[name]],
      outfile: `dist/${name}.mjs`,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      minify: name.includes('/api'),
      sourcemap: false,
      // ali-oss pulls proxy-agent lazily; it is never used here.
      external: ['proxy-agent'],
      // ESM bundles of CommonJS packages need require.
      banner: {
        js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
      },
      logLevel: 'warning',
      write: false,
    });
    // Written whole, then renamed: a process starting a bundle never reads a half-written one.
    for (const file of outputFiles) {
      await mkdir(path.dirname(file.path), { recursive: true });
      const partial = `${file.path}.${process.pid}.tmp`;
      await writeFile(partial, file.contents);
      await rename(partial, file.path);
    }
  }),
);
