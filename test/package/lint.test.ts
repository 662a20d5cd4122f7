/**
 * The package's lints, offline: Are The Types Wrong (`attw --profile esm-only`: every subpath's
 * types resolve under node16 from ESM and under bundlers, CommonJS resolution being require(esm)'s)
 * and publint (`--strict`: warnings fail) on this run's tarball, which is what `attw --pack .` and
 * `publint` pack themselves; and no top-level await in lib/, which would make `require()` of an
 * entry fail with ERR_REQUIRE_ASYNC_MODULE; and an `allowScripts` decision in package.json for each
 * installed dependency with an install script (npm then installs without listing them).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';
import { env, packedTarball, ROOT, run } from './packed.js';

const bin = (name: string) => path.join(ROOT, 'node_modules/.bin', name);

/** The command's exit status and output (a failing tool prints what it found). */
async function status(command: string, args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(command, args, { cwd: ROOT, env: env(), maxBuffer: 1 << 24 });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** Every `await` (and `for await`, `await using`) of a source file outside any function: `file:line`. */
function topLevelAwaits(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) || ts.isClassStaticBlockDeclaration(node)) return;
    const awaits =
      ts.isAwaitExpression(node) ||
      (ts.isForOfStatement(node) && node.awaitModifier !== undefined) ||
      (ts.isVariableDeclarationList(node) &&
        (node.flags & ts.NodeFlags.AwaitUsing) === ts.NodeFlags.AwaitUsing);
    if (awaits) found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

describe('no top-level await in lib/ (every entry loads with require)', () => {
  it('finds none in lib/', () => {
    const files = sources('lib');
    expect(files.length).toBeGreaterThan(50);
    expect(files.flatMap((file) => topLevelAwaits(file, readFileSync(file, 'utf8')))).toEqual([]);
  });

  it('finds one where there is (the check can fail), not inside functions', () => {
    const text = [
      "const a = await import('x');",
      'for await (const b of c) {}',
      'async function f() { await 1; for await (const d of e) {} }',
      'const g = async () => await 2;',
      'class H { static { void 0; } async m() { await 3; } }',
      'if (a) { await 4; }',
      '',
    ].join('\n');
    expect(topLevelAwaits('m.ts', text)).toEqual(['m.ts:1', 'm.ts:2', 'm.ts:6']);
  });
});

describe('the tarball passes attw (esm-only) and publint (strict)', () => {
  let tarball: string;
  beforeAll(async () => {
    ({ tarball } = await packedTarball());
  });

  it('attw --profile esm-only exits 0', async () => {
    const { code, output } = await status(bin('attw'), [
      tarball,
      '--profile',
      'esm-only',
      '--format',
      'table',
    ]);
    expect(code, output).toBe(0);
    expect(output).toMatch(/No problems found|🟢/);
  });

  it('publint --strict exits 0', async () => {
    const { code, output } = await status(bin('publint'), ['run', tarball, '--strict']);
    expect(code, output).toBe(0);
    expect(output).toMatch(/All good/);
  });
});

describe("the dependencies' install scripts: each one installed is decided in package.json", () => {
  it('gives every installed package of the lockfile with an install script an allowScripts entry, and no other', async () => {
    const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { hasInstallScript?: boolean }>;
    };
    const scripted = Object.entries(lock.packages)
      .filter(([at, p]) => p.hasInstallScript && existsSync(path.join(ROOT, at)))
      .map(([at]) => at.slice(at.lastIndexOf('node_modules/') + 'node_modules/'.length));
    const { allowScripts } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      allowScripts: Record<string, boolean>;
    };
    expect(scripted.length).toBeGreaterThan(0);
    expect(Object.keys(allowScripts).sort()).toEqual([...new Set(scripted)].sort());
  });
});
