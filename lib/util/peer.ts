/**
 * The framework adapters' optional peer dependencies: each adapter entry loads its framework
 * through `requirePeer` while it is evaluated, synchronously (no top-level await, so every entry
 * also loads with `require()` on Node ≥ 20.19), and importing the entry without the framework
 * installed throws a `MissingPeerError` naming the package to install instead of a bare
 * module-resolution failure.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** An adapter entry was imported without its framework installed. */
export class MissingPeerError extends Error {
  override readonly name = 'MissingPeerError';
  constructor(
    /** The adapter entry, such as `agent-state-store/langgraph`. */
    readonly entry: string,
    /** The package it needs, such as `@langchain/langgraph-checkpoint`. */
    readonly missing: string,
    options?: ErrorOptions,
  ) {
    super(
      `${entry} needs the package ${missing}: install it next to agent-state-store (npm install ${missing})`,
      options,
    );
  }
}

const requireFile = createRequire(import.meta.url);

/**
 * Loads a module synchronously as a static `import` would: resolved with the `import` conditions
 * (`import.meta.resolve`, which also runs the registered resolve hooks), then loaded by `require`
 * of that file (require(esm) for an ES module). A framework published both as ES modules and as
 * CommonJS thus gives its ES module build, the very instance the application's own `import` gets,
 * so its classes are one class on both sides (`instanceof` holds); a bare `require(specifier)`
 * would load the CommonJS copy beside it.
 */
export function loadModule(specifier: string): unknown {
  return requireFile(fileURLToPath(import.meta.resolve(specifier)));
}

/** The package a bare specifier, or a path into node_modules, names (`@scope/name` or `name`). */
function packageOf(specifier: string): string | undefined {
  const at = specifier.lastIndexOf('node_modules/');
  const parts = (at < 0 ? specifier : specifier.slice(at + 'node_modules/'.length)).split('/');
  return parts[0]?.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** The package a module-resolution failure names (`Cannot find package 'x' imported from …`). */
function missingPackage(error: unknown): string | undefined {
  const e = error as { code?: unknown; message?: unknown } | undefined;
  if (e?.code !== 'ERR_MODULE_NOT_FOUND' && e?.code !== 'MODULE_NOT_FOUND') return undefined;
  const named = /Cannot find (?:package|module) '([^']+)'/.exec(String(e.message))?.[1];
  return named === undefined ? undefined : packageOf(named);
}

/**
 * Loads a framework module (`specifier`, with `load`: `loadModule` unless a test hands another),
 * throwing a `MissingPeerError` naming the package that is not installed: `specifier`'s own
 * package, or one of `peers` (the packages it needs in turn, which the user installs too); any
 * other failure passes through. `T` is the module's type (`typeof` a type-only namespace import).
 */
export function requirePeer<T>(
  entry: string,
  specifier: string,
  peers: readonly string[] = [],
  load: (specifier: string) => unknown = loadModule,
): T {
  try {
    return load(specifier) as T;
  } catch (error) {
    const missing = missingPackage(error);
    if (missing !== undefined && (missing === packageOf(specifier) || peers.includes(missing)))
      throw new MissingPeerError(entry, missing, { cause: error });
    throw error;
  }
}
