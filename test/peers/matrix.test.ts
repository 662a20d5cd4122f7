/**
 * The framework peer matrix (test/peers/matrix.json): package.json's peer ranges are exactly each
 * framework's [lowest, newest], the repository's devDependencies pin the lowest, and each cell —
 * a framework's peers all at their lowest, or all at their newest — installs the packed package
 * and those versions in a folder of its own (under dist/, which git ignores) and runs the
 * adapter's tests there (test/peers/cell.config.ts points them at the cell's build and framework).
 *
 * A cell at the repository's pins is the fast tier's own run of test/adapters/ (the same versions
 * and the same sources as the build), so by default only the other cells install and run here;
 * `PEER_MATRIX=all` runs every cell. Installing reaches the registry for what npm's cache lacks.
 */
import { readdirSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { env, installedProject, packedTarball, ROOT, rootManifest, run } from '../package/packed.js';

interface Bounds {
  readonly lowest: string;
  readonly newest: string;
}
interface Framework {
  readonly entry: string;
  readonly tests: readonly string[];
  /** Packages the tests need besides the framework, installed at the repository's devDependencies pins. */
  readonly testPackages: readonly string[];
  readonly peers: Readonly<Record<string, Bounds>>;
}
interface Matrix {
  readonly frameworks: Readonly<Record<string, Framework>>;
}

const matrix = JSON.parse(await readFile(path.join(ROOT, 'test/peers/matrix.json'), 'utf8')) as Matrix;
const manifest = await rootManifest();
const frameworks = Object.entries(matrix.frameworks);

/** The peer range a framework's bounds give: the one version, or every version from lowest to newest. */
const rangeOf = ({ lowest, newest }: Bounds): string =>
  lowest === newest ? lowest : `>=${lowest} <=${newest}`;

interface Cell {
  readonly framework: string;
  readonly bound: 'lowest' | 'newest';
  /** `name@version` of each peer. */
  readonly versions: readonly string[];
  /** All of them the repository's devDependencies pins. */
  readonly pinned: boolean;
}

/** Each framework's cells: its peers at their lowest, and at their newest when that differs. */
const cells: Cell[] = frameworks.flatMap(([framework, f]) => {
  const at = (bound: 'lowest' | 'newest'): Cell => {
    const peers = Object.entries(f.peers);
    return {
      framework,
      bound,
      versions: peers.map(([name, b]) => `${name}@${b[bound]}`),
      pinned: peers.every(([name, b]) => manifest.devDependencies[name] === b[bound]),
    };
  };
  const lowest = at('lowest');
  const newest = at('newest');
  return lowest.versions.join() === newest.versions.join() ? [lowest] : [lowest, newest];
});
const runAll = process.env.PEER_MATRIX === 'all';

describe('the peer matrix (test/peers/matrix.json) and package.json', () => {
  it('gives each framework peer the range [lowest, newest], optional, and nothing the file does not list', () => {
    const listed = frameworks.flatMap(([, f]) => Object.keys(f.peers));
    for (const [, f] of frameworks)
      for (const [name, bounds] of Object.entries(f.peers)) {
        expect(manifest.peerDependencies[name], name).toBe(rangeOf(bounds));
        expect(
          (manifest as unknown as { peerDependenciesMeta: Record<string, { optional?: boolean }> })
            .peerDependenciesMeta[name]?.optional,
          name,
        ).toBe(true);
      }
    expect(new Set(listed).size).toBe(listed.length);
    expect(rangeOf({ lowest: '0.14.3', newest: '0.20.0' })).toBe('>=0.14.3 <=0.20.0');
  });

  it('has a framework for each adapter entry that loads one (lib/entries/), with its tests', async () => {
    const loading = [];
    for (const file of readdirSync(path.join(ROOT, 'lib/entries'))) {
      const text = await readFile(path.join(ROOT, 'lib/entries', file), 'utf8');
      if (/requirePeer[<(]/.test(text)) loading.push(`agent-state-store/${file.replace(/\.ts$/, '')}`);
    }
    expect(frameworks.map(([, f]) => f.entry).sort()).toEqual(loading.sort());
    for (const [, f] of frameworks) {
      expect(Object.keys(manifest.exports)).toContain(`./${f.entry.slice('agent-state-store/'.length)}`);
      for (const test of f.tests)
        await expect(readFile(path.join(ROOT, test), 'utf8')).resolves.toMatch(
          f.entry.split('/')[1] as string,
        );
      for (const name of f.testPackages) expect(manifest.devDependencies[name], name).toBeDefined();
    }
  });

  it('pins the lowest of each peer in devDependencies, installed: the fast tier tests that cell', async () => {
    for (const [, f] of frameworks)
      for (const [name, { lowest }] of Object.entries(f.peers)) {
        expect(manifest.devDependencies[name], name).toBe(lowest);
        const installed = JSON.parse(
          await readFile(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8'),
        );
        expect(installed.version, name).toBe(lowest);
      }
    expect(cells.filter((c) => c.bound === 'lowest').every((c) => c.pinned)).toBe(true);
  });
});

describe.concurrent('each cell: the packed package and its framework versions, the adapter tests', () => {
  for (const cell of cells) {
    const f = matrix.frameworks[cell.framework] as Framework;
    const name = `${cell.framework} at its ${cell.bound} (${cell.versions.join(', ')})`;
    it.runIf(runAll || !cell.pinned)(
      name,
      async () => {
        const { tarball } = await packedTarball();
        const under = path.join(ROOT, 'dist', 'peer-cells');
        await mkdir(under, { recursive: true });
        const started = Date.now();
        const project = await installedProject(tarball, {
          under,
          packages: [...cell.versions, ...f.testPackages.map((p) => `${p}@${manifest.devDependencies[p]}`)],
        });
        try {
          const installed = Date.now();
          for (const version of cell.versions) {
            const at = version.lastIndexOf('@');
            const pkg = JSON.parse(
              await readFile(
                path.join(project, 'node_modules', version.slice(0, at), 'package.json'),
                'utf8',
              ),
            );
            expect(pkg.version, version).toBe(version.slice(at + 1));
          }
          const log = path.join(project, 'redirected.log');
          await writeFile(log, '');
          const result = await run(
            process.execPath,
            [
              path.join(ROOT, 'node_modules/vitest/vitest.mjs'),
              'run',
              '--config',
              'test/peers/cell.config.ts',
            ],
            {
              cwd: ROOT,
              env: env({
                NO_COLOR: '1',
                PEER_CELL: project,
                PEER_CELL_TESTS: f.tests.join(','),
                PEER_CELL_LOG: log,
              }),
              maxBuffer: 1 << 26,
            },
          ).catch((error: { stdout?: string; stderr?: string; message: string }) => {
            throw new Error(
              `${name}: the adapter tests failed\n${error.stdout ?? ''}\n${error.stderr ?? ''}`,
            );
          });
          const summary = /Tests\s+(\d+) passed/.exec(result.stdout);
          expect(Number(summary?.[1])).toBeGreaterThan(0);
          // The tests ran on the cell: its build of the adapter, its copy of the framework.
          const redirected = (await readFile(log, 'utf8')).split('\n');
          const built = path.join(project, 'node_modules/agent-state-store/dist/lib');
          expect(
            redirected.filter((id) =>
              [`entries/${cell.framework}.js`, `adapters/${cell.framework}.js`].some(
                (file) => id === path.join(built, file),
              ),
            ),
          ).not.toEqual([]);
          const framework = Object.keys(f.peers)[0] as string;
          expect(
            redirected.filter((id) => id.startsWith(path.join(project, 'node_modules', framework, '/'))),
          ).not.toEqual([]);
          console.log(
            `${name}: install ${((installed - started) / 1000).toFixed(1)} s, ${summary?.[1]} tests ${((Date.now() - installed) / 1000).toFixed(1)} s`,
          );
        } finally {
          await rm(project, { recursive: true, force: true });
        }
      },
      300_000,
    );
  }
});
