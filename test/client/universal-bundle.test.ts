/**
 * The universal entry (`agent-state-store/client`, lib/entries/client.ts) is for every runtime:
 * its whole import graph, type-only imports included, has no `node:` import and no Node global
 * (`Buffer`, `process` other than `globalThis.process?.`, `require`, `__dirname`, `setImmediate`);
 * esbuild bundles it for `platform: 'browser'` with no externals; and the bundle runs in a bare
 * context that has only what browsers and workers have (no `process`, no `Buffer`). The Node entry
 * adds lib/client/node/, which the universal one never reaches.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';

const UNIVERSAL = 'lib/entries/client.ts';
const NODE = 'lib/entries/client-node.ts';
/** The packages the client may bundle. */
const PACKAGES = ['@noble/hashes', 'canonicalize', 'zod'];

const IMPORT = /(?:^|[;\n])\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/g;

/** Code without its comments (well enough for these checks: no comment markers inside strings here). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');

/** Every lib/ file an entry reaches through relative imports, with the package imports of each. */
function graph(entry: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const visit = (file: string) => {
    if (out.has(file)) return;
    const specifiers = [...code(readFileSync(file, 'utf8')).matchAll(IMPORT)].map((m) => m[1] as string);
    out.set(
      file,
      specifiers.filter((s) => !s.startsWith('.')),
    );
    for (const s of specifiers.filter((s) => s.startsWith('.')))
      visit(path.join(path.dirname(file), s.replace(/\.js$/, '.ts')));
  };
  visit(entry);
  return out;
}

/** Uses of a Node global in code: each as `file: match`. */
function nodeGlobals(files: Iterable<string>): string[] {
  const GLOBAL =
    /(?<![.\w$])(?:Buffer\b|process\s*\.|require\s*\(|__dirname\b|__filename\b|setImmediate\b|global\s*\.)/g;
  return [...files].flatMap((file) =>
    [...code(readFileSync(file, 'utf8')).matchAll(GLOBAL)].map((m) => `${file}: ${m[0]}`),
  );
}

describe('the universal client entry', () => {
  it('imports no node: module and uses no Node global, anywhere in its graph (type imports included)', () => {
    const universal = graph(UNIVERSAL);
    expect(universal.size).toBeGreaterThan(25);
    const imports = [...universal].flatMap(([file, packages]) => packages.map((p) => `${file}: ${p}`));
    expect(imports.filter((i) => /: node:/.test(i))).toEqual([]);
    const packages = new Set(
      [...universal.values()]
        .flat()
        .map((p) => (p.startsWith('@') ? p.split('/').slice(0, 2) : p.split('/').slice(0, 1)).join('/')),
    );
    expect([...packages].filter((p) => !PACKAGES.includes(p))).toEqual([]);
    expect(nodeGlobals(universal.keys())).toEqual([]);
    expect([...universal.keys()].filter((f) => f.startsWith('lib/client/node/'))).toEqual([]);
    // The checks see what they look for: the Node entry's graph has both.
    const node = graph(NODE);
    expect([...node.keys()]).toEqual(
      expect.arrayContaining([...universal.keys(), 'lib/client/node/transfers.ts']),
    );
    expect([...node.values()].flat()).toContain('node:zlib');
    expect(nodeGlobals(node.keys()).length).toBeGreaterThan(0);
  });

  it('bundles with esbuild for the browser, no externals, only its three packages', async () => {
    const result = await build({
      entryPoints: [UNIVERSAL],
      bundle: true,
      minify: true,
      platform: 'browser',
      format: 'esm',
      target: 'es2022',
      metafile: true,
      write: false,
      logLevel: 'silent',
    });
    expect(result.errors).toEqual([]);
    expect(result.warnings).toEqual([]);
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.filter((i) => i.startsWith('node:') || i.includes('(disabled)'))).toEqual([]);
    const packages = new Set(
      inputs.flatMap((i) => {
        const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(i);
        return m ? [m[1] as string] : [];
      }),
    );
    expect([...packages].sort()).toEqual(PACKAGES);
    const output = result.outputFiles[0]?.text ?? '';
    expect(output).not.toMatch(/from\s*["']node:|require\(["']/);
    console.log(
      `universal client, esbuild platform browser, minified: ${(output.length / 1024).toFixed(1)} KB`,
    );
    // The Node entry does not bundle for the browser: its node: modules cannot be resolved there.
    await expect(
      build({ entryPoints: [NODE], bundle: true, platform: 'browser', write: false, logLevel: 'silent' }),
    ).rejects.toThrow(/node:/);
  });

  it('runs in a context with only web globals: no process, no Buffer', async () => {
    const result = await build({
      entryPoints: [UNIVERSAL],
      bundle: true,
      platform: 'browser',
      format: 'iife',
      globalName: 'agentState',
      target: 'es2022',
      write: false,
      logLevel: 'silent',
    });
    const sent: Array<{ url: string; headers: Record<string, string> }> = [];
    const web = {
      fetch: async (url: string, init: { headers: Record<string, string> }) => {
        sent.push({ url, headers: init.headers });
        return new Response('{"a":1}', {
          status: 200,
          headers: { etag: '"v1"', 'agent-state-revision': '1' },
        });
      },
      // A worker's scope: the client sends no User-Agent there.
      WorkerGlobalScope: class {},
      ...Object.fromEntries(
        [
          'AbortController',
          'AbortSignal',
          'Blob',
          'CompressionStream',
          'DecompressionStream',
          'Headers',
          'ReadableStream',
          'Response',
          'TextDecoder',
          'TextEncoder',
          'URL',
          'URLSearchParams',
          'atob',
          'btoa',
          'clearTimeout',
          'console',
          'crypto',
          'setTimeout',
        ].map((name) => [name, (globalThis as Record<string, unknown>)[name]]),
      ),
    };
    const context = vm.createContext(web);
    vm.runInContext(result.outputFiles[0]?.text ?? '', context);
    const out = await vm.runInContext(
      `(async () => {
        const client = agentState.createHttpClient({ baseUrl: 'http://api.test', token: 't' });
        const value = await client.get('s', 'k');
        let missing;
        try { agentState.createHttpClient(); } catch (e) { missing = e.name + ': ' + e.message; }
        return { value, missing, hash: agentState.chainHash(agentState.EMPTY_HASH, [{ b: 1, a: 2 }]), noProcess: typeof process, noBuffer: typeof Buffer };
      })()`,
      context,
    );
    expect(out.value).toEqual({ a: 1 });
    expect(out.missing).toMatch(/^ValidationError: baseUrl: .*AGENT_STATE_URL/);
    // The plain-JS SHA-256 there, node:crypto's here: the same chain hash.
    expect(out.hash).toBe(chainHash(EMPTY_HASH, [{ a: 2, b: 1 }]));
    expect([out.noProcess, out.noBuffer]).toEqual(['undefined', 'undefined']);
    expect(sent).toEqual([
      { url: 'http://api.test/v1/sessions/s/state/k', headers: { authorization: 'Bearer t' } },
    ]);
  });
});
