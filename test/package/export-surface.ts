/**
 * The names each `exports` entry of package.json gives a user: the values its built module exports
 * at run time, and the types its `.d.ts` exports besides (read with the TypeScript compiler).
 * After a deliberate change of the surface, record it again: `RECORD_EXPORTS=1` on the library
 * test (test/package/library.test.ts).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export interface EntrySurface {
  /** What the built `.js` exports at run time. */
  readonly values: string[];
  /** What the `.d.ts` exports besides: types only. */
  readonly types: string[];
}

/** The module entries of package.json's `exports` (subpath → its `types` and `default` files). */
function packageExports(root: string): Record<string, { types: string; default: string }> {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { types?: string; default?: string }>;
  };
  return Object.fromEntries(
    Object.entries(pkg.exports).flatMap(([subpath, t]) =>
      typeof t === 'object' && t.types && t.default
        ? [[subpath, { types: t.types, default: t.default }]]
        : [],
    ),
  );
}

/** Each entry's names: its built `.js` module's (values) and its `.d.ts`'s others (types). */
export async function exportSurface(root: string): Promise<Record<string, EntrySurface>> {
  const declared = declaredNames(root);
  const out: Record<string, EntrySurface> = {};
  for (const [subpath, target] of Object.entries(packageExports(root))) {
    const values = Object.keys(await import(path.join(root, target.default))).sort();
    const names = declared[subpath] ?? [];
    const undeclared = values.filter((v) => !names.includes(v));
    if (undeclared.length > 0) throw new Error(`${subpath}: ${undeclared.join(', ')} not in its .d.ts`);
    out[subpath] = { values, types: names.filter((n) => !values.includes(n)) };
  }
  return out;
}

/** The export names of each entry's `.d.ts`, resolved through every re-export. */
function declaredNames(root: string): Record<string, string[]> {
  const entries = Object.fromEntries(
    Object.entries(packageExports(root)).map(([subpath, t]) => [subpath, path.join(root, t.types)]),
  );
  const program = ts.createProgram(Object.values(entries), {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    noEmit: true,
    skipLibCheck: true,
  });
  const checker = program.getTypeChecker();
  return Object.fromEntries(
    Object.entries(entries).map(([subpath, file]) => {
      const source = program.getSourceFile(file);
      const symbol = source && checker.getSymbolAtLocation(source);
      if (!symbol) throw new Error(`${subpath}: ${file} is not a module`);
      return [subpath, checker.getExportsOfModule(symbol).map((s) => s.name)];
    }),
  );
}
