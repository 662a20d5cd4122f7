/**
 * The framework adapters' optional peer dependencies (issue 17): each adapter entry loads its
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

function notFound(error: unknown, specifier: string): boolean {
  const e = error as { code?: unknown; message?: unknown } | undefined;
  return (
    (e?.code === 'ERR_MODULE_NOT_FOUND' || e?.code === 'MODULE_NOT_FOUND') &&
    typeof e.message === 'string' &&
    e.message.includes(specifier)
  );
}

/**
 * Loads `specifier` with `load` (a dynamic import written at the call site, which keeps its types),
 * throwing a `MissingPeerError` if the package is not installed; any other failure passes through.
 */
export async function importPeer<T>(entry: string, specifier: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (notFound(error, specifier)) throw new MissingPeerError(entry, specifier, { cause: error });
    throw error;
  }
}
