/**
 * The floors of lib/ (docs/DEVELOPING.md, "The floors"), checked over the import graph of the
 * sources: every `import` and `export … from` of a relative module, type-only ones included.
 *
 * - lib/util/ imports nothing of lib/ but itself; lib/contract/ only itself and lib/util/.
 * - The client, the protocol, the lock and the adapters stand on the contract: they never import
 *   an engine (lib/store/, lib/engines/<name>/).
 * - Only the wiring (lib/http/app.ts, lib/http/backends/, lib/entries/, lib/index.ts) imports an engine
 *   from outside it;
 *   an engine under lib/engines/ imports only the contract, lib/util/ and itself.
 * - No import circle anywhere in lib/.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const LIB = 'lib';

/** Every `.ts` file under a folder (paths from the project root). */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

const IMPORT =
  /(?:^|[;\n])\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]/g;

/** Each file's relative imports, resolved to project paths (`.js` written for `.ts`). */
function importGraph(files: readonly string[], read = (f: string) => readFileSync(f, 'utf8')) {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = [...read(file).matchAll(IMPORT)].map((m) =>
      path.join(path.dirname(file), (m[1] as string).replace(/\.js$/, '.ts')),
    );
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** The import circles of a graph (its strongly connected components with more than one file, or a self-import). */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const under = (file: string, folder: string) => file.startsWith(`${LIB}/${folder}/`);
/** The engine a file belongs to: `store` (the object-storage engine) or `engines/<name>`; else undefined. */
const engineOf = (file: string): string | undefined =>
  under(file, 'store') ? 'store' : /^lib\/engines\/[^/]+\//.exec(file)?.[0].slice(LIB.length + 1, -1);
const WIRING = (file: string) =>
  file === 'lib/http/app.ts' ||
  file === 'lib/index.ts' ||
  under(file, 'entries') ||
  under(file, 'http/backends');

/** The floors' rules: each broken one as `importer -> imported: rule`. */
function violations(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const out: string[] = [];
  for (const [from, targets] of graph) {
    for (const to of targets) {
      if (!to.startsWith(`${LIB}/`)) continue;
      const say = (rule: string) => out.push(`${from} -> ${to}: ${rule}`);
      if (under(from, 'util') && !under(to, 'util')) say('lib/util/ imports only itself');
      if (under(from, 'contract') && !under(to, 'contract') && !under(to, 'util'))
        say('lib/contract/ imports only itself and lib/util/');
      const engine = engineOf(to);
      if (!engine || engineOf(from) === engine) continue;
      if (['client', 'protocol', 'lock', 'adapters'].some((f) => under(from, f)))
        say('the client, protocol, lock and adapters never import an engine');
      else if (!WIRING(from))
        say('only lib/http/app.ts, lib/http/backends/, lib/entries/ and lib/index.ts import an engine');
    }
    const own = engineOf(from);
    if (own?.startsWith('engines/'))
      for (const to of targets)
        if (to.startsWith(`${LIB}/`) && engineOf(to) !== own && !under(to, 'contract') && !under(to, 'util'))
          out.push(`${from} -> ${to}: an engine imports only the contract, lib/util/ and itself`);
  }
  return out;
}

describe('layering of lib/', () => {
  const graph = importGraph(sources(LIB));

  it('reads the import graph (every lib/ file, type-only imports and re-exports included)', () => {
    expect(graph.size).toBeGreaterThan(80);
    expect(graph.get('lib/contract/ids.ts')).toContain('lib/contract/errors.ts');
    expect(graph.get('lib/entries/client.ts')).toContain('lib/contract/errors.ts');
  });

  it('keeps the floors: contract on util, client/protocol/lock/adapters on the contract, engines wired only at the top', () => {
    expect(violations(graph)).toEqual([]);
  });

  it('has no import circle', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('finds a circle and a broken floor when there is one (the checks can fail)', () => {
    const files: Record<string, string> = {
      'lib/contract/a.ts': "import type { B } from './b.js';\nimport { x } from '../store/x.js';",
      'lib/contract/b.ts': "export { a } from './a.js';",
      'lib/client/c.ts': "import { y } from '../store/y.js';",
      'lib/engines/redis/e.ts': "import { z } from '../../store/z.js';",
    };
    const fake = importGraph(Object.keys(files), (f) => files[f] as string);
    expect(circles(fake)).toEqual([['lib/contract/a.ts', 'lib/contract/b.ts']]);
    expect(violations(fake)).toEqual([
      'lib/contract/a.ts -> lib/store/x.ts: lib/contract/ imports only itself and lib/util/',
      'lib/contract/a.ts -> lib/store/x.ts: only lib/http/app.ts, lib/http/backends/, lib/entries/ and lib/index.ts import an engine',
      'lib/client/c.ts -> lib/store/y.ts: the client, protocol, lock and adapters never import an engine',
      'lib/engines/redis/e.ts -> lib/store/z.ts: only lib/http/app.ts, lib/http/backends/, lib/entries/ and lib/index.ts import an engine',
      'lib/engines/redis/e.ts -> lib/store/z.ts: an engine imports only the contract, lib/util/ and itself',
    ]);
  });
});
