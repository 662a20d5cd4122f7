/**
 * The vitest configuration of one peer-matrix cell (test/peers/matrix.test.ts runs it in a child
 * process): the adapter's own tests (test/adapters/), run against the packed package and the
 * framework version installed in the cell's folder (`PEER_CELL`, a folder under dist/), not
 * against lib/ and this repository's framework. Every import of a module of lib/ is answered with
 * its build in the cell (`node_modules/agent-state-store/dist/lib/`), and every bare import of a
 * package the cell installed with the cell's copy, as the cell's own project would resolve it;
 * what the cell lacks (vitest, the local server's packages) resolves from this repository.
 */
import { appendFileSync, existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { defineConfig, type Plugin } from 'vitest/config';

const cell = process.env.PEER_CELL ?? '';
if (!cell || !existsSync(path.join(cell, 'node_modules')))
  throw new Error('PEER_CELL: the cell folder, installed');
const files = (process.env.PEER_CELL_TESTS ?? '').split(',').filter(Boolean);
if (files.length === 0) throw new Error('PEER_CELL_TESTS: the test files of the adapter');

/** Where each redirected module is written, once (the matrix test checks the cell was used). */
const log = process.env.PEER_CELL_LOG;
const logged = new Set<string>();
const redirect = (id: string | undefined): string | undefined => {
  if (id !== undefined && log && !logged.has(id)) {
    logged.add(id);
    appendFileSync(log, `${id}\n`);
  }
  return id;
};

const LIB = `${path.resolve('lib')}${path.sep}`;
const BUILT = path.join(cell, 'node_modules', 'agent-state-store', 'dist', 'lib');

/** The packages installed at the top of the cell's node_modules (`@scope/name` or `name`). */
const installed = new Set(
  readdirSync(path.join(cell, 'node_modules')).flatMap((name) =>
    name.startsWith('@')
      ? readdirSync(path.join(cell, 'node_modules', name)).map((inner) => `${name}/${inner}`)
      : name.startsWith('.')
        ? []
        : [name],
  ),
);

const RUNNER = /^(vitest|vite|@vitest\/.*)$/;

const packageName = (specifier: string): string => {
  const parts = specifier.split('/');
  return (specifier.startsWith('@') ? parts.slice(0, 2) : parts.slice(0, 1)).join('/');
};

function peerCell(): Plugin {
  return {
    name: 'peer-cell',
    enforce: 'pre',
    async resolveId(source, importer, options) {
      if (!importer || importer.includes(`${path.sep}node_modules${path.sep}`)) return null;
      if (source.startsWith('.')) {
        const target = path.resolve(path.dirname(importer), source);
        return target.startsWith(LIB) ? redirect(path.join(BUILT, target.slice(LIB.length))) : null;
      }
      const name = packageName(source);
      // The test runner is this repository's, even where a package of the cell brings its own.
      if (source.startsWith('node:') || !installed.has(name) || RUNNER.test(name)) return null;
      const resolved = await this.resolve(source, path.join(cell, 'package.json'), {
        ...options,
        skipSelf: true,
      });
      redirect(resolved?.id);
      return resolved;
    },
  };
}

export default defineConfig({
  plugins: [peerCell()],
  test: {
    include: files,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
