/**
 * The adapters' peer loader (lib/adapters/peer.ts): a missing framework, or a package it needs in
 * turn, is a MissingPeerError naming that package; a failure of anything else passes through. The
 * framework is loaded synchronously, as its ES module build: the instance the application's own
 * `import` gets.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { loadModule, MissingPeerError, requirePeer } from '../../lib/adapters/peer.js';

const notFound = (message: string) => Object.assign(new Error(message), { code: 'ERR_MODULE_NOT_FOUND' });
const failing = (error: Error) => () => {
  throw error;
};
const caught = (f: () => unknown): unknown => {
  try {
    f();
  } catch (error) {
    return error;
  }
  throw new Error('did not throw');
};

describe('requirePeer', () => {
  it('names the framework when it is not installed', () => {
    const error = caught(() =>
      requirePeer(
        'agent-state-store/langgraph',
        '@langchain/langgraph-checkpoint',
        ['@langchain/core'],
        failing(notFound("Cannot find package '@langchain/langgraph-checkpoint' imported from /app/x.js")),
      ),
    );
    expect(error).toBeInstanceOf(MissingPeerError);
    expect((error as MissingPeerError).missing).toBe('@langchain/langgraph-checkpoint');
  });

  it('names the package the framework needs in turn, not the framework found', () => {
    const cause = notFound(
      "Cannot find package '@langchain/core' imported from /app/node_modules/@langchain/langgraph-checkpoint/dist/index.js",
    );
    const error = caught(() =>
      requirePeer(
        'agent-state-store/langgraph',
        '@langchain/langgraph-checkpoint',
        ['@langchain/core'],
        failing(cause),
      ),
    );
    expect((error as MissingPeerError).missing).toBe('@langchain/core');
    expect((error as MissingPeerError).message).toMatch(/npm install @langchain\/core\)$/);
    expect((error as MissingPeerError).cause).toBe(cause);
  });

  it("a missing file inside the framework, or a subpath's package, names the package", () => {
    const file = caught(() =>
      requirePeer(
        'agent-state-store/strands',
        '@strands-agents/sdk/storage',
        [],
        failing(
          notFound(
            "Cannot find module '/app/node_modules/@strands-agents/sdk/dist/storage.js' imported from /app/a.js",
          ),
        ),
      ),
    );
    expect((file as MissingPeerError).missing).toBe('@strands-agents/sdk');
    const subpath = caught(() =>
      requirePeer(
        'agent-state-store/strands',
        '@strands-agents/sdk/storage',
        [],
        failing(notFound("Cannot find package '@strands-agents/sdk' imported from /app/a.js")),
      ),
    );
    expect((subpath as MissingPeerError).missing).toBe('@strands-agents/sdk');
  });

  it('passes through anything else: another missing package, or another failure', () => {
    const other = notFound(
      "Cannot find package 'left-pad' imported from /app/node_modules/@openai/agents-core/x.js",
    );
    expect(
      caught(() => requirePeer('agent-state-store/openai-agents', '@openai/agents-core', [], failing(other))),
    ).toBe(other);
    const broken = new SyntaxError('Unexpected token');
    expect(
      caught(() =>
        requirePeer('agent-state-store/openai-agents', '@openai/agents-core', [], failing(broken)),
      ),
    ).toBe(broken);
    expect(requirePeer('x', 'y', [], () => 42)).toBe(42);
  });

  it('loads an installed package synchronously, and names one that is not installed', () => {
    expect(requirePeer<{ canonicalize: unknown }>('x', 'canonicalize')).toBeTypeOf('object');
    const error = caught(() => requirePeer('agent-state-store/x', 'no-such-package-for-the-peer-test/sub'));
    expect(error).toBeInstanceOf(MissingPeerError);
    expect((error as MissingPeerError).missing).toBe('no-such-package-for-the-peer-test');
    expect((error as MissingPeerError).cause).toMatchObject({ code: 'ERR_MODULE_NOT_FOUND' });
  });
});

describe('loadModule', () => {
  it("gives a dual package's ES module build, the instance `import` gets, not the CommonJS copy", async () => {
    const imported = await import('@openai/agents-core');
    const loaded = loadModule('@openai/agents-core') as typeof imported;
    expect(loaded.UserError).toBe(imported.UserError);
    // What a bare require would have loaded: another class of the same name.
    const cjs = createRequire(import.meta.url)('@openai/agents-core') as typeof imported;
    expect(cjs.UserError).not.toBe(imported.UserError);
    expect(new loaded.UserError('x')).toBeInstanceOf(imported.UserError);
  });
});
