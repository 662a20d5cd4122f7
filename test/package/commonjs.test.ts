/**
 * The package from CommonJS: every `exports` subpath loads with `require()` (require(esm), Node ≥
 * 20.19: one `default` condition, the same ES module file `import` loads, and no top-level await
 * on the way), with what `test/package/exports.json` records; a class is one class across entries
 * and across `require` and `import` (no second build beside it). Installed into a `"type":
 * "commonjs"` project under dist/ (so the optional peers resolve to this repository's), and into
 * one with nothing beside it, where each framework adapter throws MissingPeerError from `require`.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { env, installedProject, packedTarball, ROOT, rootManifest, run } from './packed.js';

/**
 * Loads every subpath with require, then with import; prints names, shared classes and mismatches.
 * One name differs by design: `createHttpClient` of `agent-state-store/client` (the universal
 * client) is not the Node entries' (`/client/node` and the root), which returns the Node client.
 */
const REQUIRE_EACH = `
const subpaths = require('agent-state-store/package.json').exports;
const ids = Object.keys(subpaths).filter((s) => s !== './package.json')
  .map((s) => (s === '.' ? 'agent-state-store' : 'agent-state-store' + s.slice(1)));
const required = Object.fromEntries(ids.map((id) => [id, require(id)]));
(async () => {
  const names = {};
  const mismatches = [];
  const byName = new Map();
  for (const id of ids) {
    const imported = await import(id);
    names[id] = Object.keys(required[id]).sort();
    for (const name of names[id]) {
      if (required[id][name] !== imported[name]) mismatches.push(id + ' ' + name + ': require and import differ');
      // The universal entry's own factory: the Node entries' returns the Node client (its superset).
      if (id === 'agent-state-store/client' && name === 'createHttpClient') continue;
      const seen = byName.get(name);
      if (seen && seen.value !== required[id][name]) mismatches.push(name + ': ' + seen.id + ' and ' + id + ' differ');
      if (!seen) byName.set(name, { id, value: required[id][name], ids: [id] });
      else seen.ids.push(id);
    }
  }
  const shared = [...byName].filter(([, v]) => v.ids.length > 1 && typeof v.value === 'function').map(([n]) => n);
  const { ValidationError } = require('agent-state-store/client');
  const { createMemoryDriver } = require('agent-state-store/drivers/memory');
  const { createStateStore } = require('agent-state-store/store');
  let thrown;
  try {
    createStateStore({ driver: createMemoryDriver(), retentionDays: -1 });
  } catch (e) {
    thrown = e;
  }
  console.log(JSON.stringify({ names, shared, mismatches, crossEntry: thrown instanceof ValidationError }));
})().catch((e) => { console.error(e); process.exit(1); });
`;

/** Requires each framework adapter; prints what each threw, synchronously. */
const REQUIRE_ADAPTERS = `
for (const entry of ['langgraph', 'openai-agents', 'strands']) {
  try {
    require('agent-state-store/' + entry);
    console.log(entry + ' loaded');
  } catch (e) {
    console.log(entry + ' ' + e.name + ' ' + e.missing);
  }
}
console.log(typeof require('agent-state-store/client').createHttpClient);
`;

describe('the package from CommonJS (require of every subpath)', () => {
  let withPeers: string;
  let alone: string;
  let out: { names: Record<string, string[]>; shared: string[]; mismatches: string[]; crossEntry: boolean };
  let stderr: string;

  beforeAll(async () => {
    const { tarball } = await packedTarball();
    [withPeers, alone] = await Promise.all([
      installedProject(tarball, { under: path.join(ROOT, 'dist'), type: 'commonjs' }),
      installedProject(tarball, { type: 'commonjs' }),
    ]);
    await writeFile(path.join(withPeers, 'require-each.js'), REQUIRE_EACH);
    await writeFile(path.join(alone, 'require-adapters.js'), REQUIRE_ADAPTERS);
    const result = await run(process.execPath, ['require-each.js'], { cwd: withPeers, env: env() });
    out = JSON.parse(result.stdout);
    stderr = result.stderr;
  });
  afterAll(async () => {
    for (const dir of [withPeers, alone]) if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('gives each exports entry two conditions: its types and one default, an ES module of dist/lib/', async () => {
    const { exports } = await rootManifest();
    for (const [subpath, target] of Object.entries(exports)) {
      if (subpath === './package.json') continue;
      const t = target as Record<string, string>;
      expect(Object.keys(t), subpath).toEqual(['types', 'default']);
      expect(t.default, subpath).toMatch(/^\.\/dist\/lib\/.+\.js$/);
      expect(t.types, subpath).toBe(t.default?.replace(/\.js$/, '.d.ts'));
    }
  });

  it('requires every subpath, each with the names test/package/exports.json records', async () => {
    const manifest = await rootManifest();
    const recorded = JSON.parse(await readFile('test/package/exports.json', 'utf8')) as Record<
      string,
      { values: string[] }
    >;
    const subpaths = Object.keys(manifest.exports).filter((s) => s !== './package.json');
    const id = (s: string) => (s === '.' ? 'agent-state-store' : `agent-state-store${s.slice(1)}`);
    expect(Object.keys(out.names).sort()).toEqual(subpaths.map(id).sort());
    for (const subpath of subpaths)
      expect(out.names[id(subpath)], subpath).toEqual(recorded[subpath]?.values);
    // The loading printed nothing (no warning, no second copy complaining).
    expect(stderr).toBe('');
  });

  it('gives one module instance: require and import agree, and a class is one class across entries', () => {
    expect(out.mismatches).toEqual([]);
    expect(out.shared).toEqual(
      expect.arrayContaining(['ValidationError', 'PreconditionFailedError', 'MissingPeerError']),
    );
    // An error the store (agent-state-store/store) throws is the client entry's class.
    expect(out.crossEntry).toBe(true);
  });

  it('each framework adapter, required without its framework, throws MissingPeerError; the client loads', async () => {
    const { stdout } = await run(process.execPath, ['require-adapters.js'], { cwd: alone, env: env() });
    expect(stdout.trim().split('\n')).toEqual([
      'langgraph MissingPeerError @langchain/langgraph-checkpoint',
      'openai-agents MissingPeerError @openai/agents-core',
      'strands MissingPeerError @strands-agents/sdk',
      'function',
    ]);
  });
});
