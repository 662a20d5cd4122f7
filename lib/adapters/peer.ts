/**
 * The framework adapters' optional peer dependencies: each adapter entry loads its
 * framework through `importPeer`, so importing the entry without the framework installed throws a
 * `MissingPeerError` naming the package to install instead of a bare module-resolution failure.
 */

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

/** The package a module-resolution failure names (`Cannot find package 'x' imported from …`). */
function missingPackage(error: unknown): string | undefined {
  const e = error as { code?: unknown; message?: unknown } | undefined;
  if (e?.code !== 'ERR_MODULE_NOT_FOUND' && e?.code !== 'MODULE_NOT_FOUND') return undefined;
  const named = /Cannot find (?:package|module) '([^']+)'/.exec(String(e.message))?.[1];
  if (named === undefined) return undefined;
  // A package name, from a bare specifier or from a path into node_modules.
  const at = named.lastIndexOf('node_modules/');
  const parts = (at < 0 ? named : named.slice(at + 'node_modules/'.length)).split('/');
  return parts[0]?.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * Loads a framework with `load` (a dynamic import written at the call site, which keeps its
 * types), throwing a `MissingPeerError` naming the package that is not installed: `specifier`
 * itself, or one of `peers` (the packages it needs in turn, which the user installs too); any
 * other failure passes through.
 */
export async function importPeer<T>(
  entry: string,
  specifier: string,
  load: () => Promise<T>,
  peers: readonly string[] = [],
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const missing = missingPackage(error);
    if (missing !== undefined && (missing === specifier || peers.includes(missing)))
      throw new MissingPeerError(entry, missing, { cause: error });
    throw error;
  }
}
