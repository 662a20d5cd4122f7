/**
 * The npm package as a user gets it, shared by the package tests (test/package/, test/peers/):
 * `npm pack` once per test run (its `prepack` builds dist/lib/), and projects that install the
 * tarball with what they need beside it.
 *
 * Packing builds the library, so the test files of one run share one tarball: the first to ask
 * packs it (a lock folder under dist/.pack/, named by the vitest process that forked the test
 * files), the others wait for it. Folders of runs whose process is gone are removed.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

export const run = promisify(execFile);
export const ROOT = process.cwd();
const PACKS = path.join(ROOT, 'dist', '.pack');

/** The environment without npm's own variables (npm_config_local_prefix would point at this repository). */
export const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_'))),
  NODE_OPTIONS: '',
  ...extra,
});

/** What `npm pack --json` says of the tarball. */
export interface Packed {
  filename: string;
  files: Array<{ path: string; size: number }>;
  size: number;
  unpackedSize: number;
}

/** The tarball of this run, and what npm said of it. */
export interface PackedTarball {
  readonly tarball: string;
  readonly packed: Packed;
  /** Seconds the pack took (the build included), in the test file that packed it; 0 in the others. */
  readonly seconds: number;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

async function packInto(dir: string): Promise<PackedTarball> {
  const started = Date.now();
  // npm prints the prepack script's output (the build's file list) before the JSON.
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], {
    cwd: ROOT,
    env: env(),
    maxBuffer: 1 << 24,
  });
  const json = stdout.startsWith('[') ? stdout : stdout.slice(stdout.indexOf('\n[') + 1);
  const packed = (JSON.parse(json) as Packed[])[0] as Packed;
  return { tarball: path.join(dir, packed.filename), packed, seconds: (Date.now() - started) / 1000 };
}

let mine: Promise<PackedTarball> | undefined;

/**
 * The tarball of this test run: packed by the first test file that asks, waited for by the others
 * (as long as it takes: the asking hook's own time, its tier's ceiling, bounds the wait).
 */
export function packedTarball(): Promise<PackedTarball> {
  mine ??= (async () => {
    await mkdir(PACKS, { recursive: true });
    for (const name of await readdir(PACKS))
      if (Number(name) !== process.ppid && !alive(Number(name)))
        await rm(path.join(PACKS, name), { recursive: true, force: true });
    const dir = path.join(PACKS, String(process.ppid));
    const done = path.join(dir, 'packed.json');
    const failed = path.join(dir, 'failed.txt');
    try {
      await mkdir(dir);
    } catch {
      // Another test file packs: wait for what it writes.
      for (;;) {
        if (existsSync(done)) return { ...JSON.parse(await readFile(done, 'utf8')), seconds: 0 };
        if (existsSync(failed)) throw new Error(`npm pack failed: ${await readFile(failed, 'utf8')}`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    try {
      const result = await packInto(dir);
      await writeFile(`${done}.tmp`, JSON.stringify(result));
      await rename(`${done}.tmp`, done);
      return result;
    } catch (error) {
      const e = error as { message?: string; stderr?: string };
      await writeFile(failed, `${e.message ?? String(error)}\n${e.stderr ?? ''}`);
      throw error;
    }
  })();
  return mine;
}

/** A project to install the package into. */
export interface ProjectOptions {
  /** The folder it is made in (default the system's temporary folder). */
  readonly under?: string;
  /** Its module type: `module` (default) or `commonjs`. */
  readonly type?: 'module' | 'commonjs';
  /** What is installed beside the tarball (`name@version`). */
  readonly packages?: readonly string[];
  /** Let npm reach the registry for what its cache lacks (default: prefer the cache). */
  readonly online?: boolean;
}

/** A new folder with a package.json, the tarball and `packages` installed there; answers its path. */
export async function installedProject(tarball: string, options: ProjectOptions = {}): Promise<string> {
  const project = await mkdtemp(path.join(options.under ?? tmpdir(), 'package-user-'));
  await writeFile(
    path.join(project, 'package.json'),
    JSON.stringify({ name: 'package-user', version: '1.0.0', private: true, type: options.type ?? 'module' }),
  );
  await run(
    'npm',
    [
      'install',
      ...(options.online ? [] : ['--prefer-offline']),
      '--no-audit',
      '--no-fund',
      tarball,
      ...(options.packages ?? []),
    ],
    { cwd: project, env: env(), maxBuffer: 1 << 24 },
  ).catch((error: { message: string; stderr?: string }) => {
    throw new Error(`npm install in ${project} failed: ${error.message}\n${error.stderr ?? ''}`);
  });
  return project;
}

/** The repository's package.json. */
export async function rootManifest(): Promise<{
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  exports: Record<string, unknown>;
}> {
  return JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8'));
}
