/**
 * The adapters' peer loader (lib/adapters/peer.ts): a missing framework, or a package it needs in
 * turn, is a MissingPeerError naming that package; a failure of anything else passes through.
 */
import { describe, expect, it } from 'vitest';
import { importPeer, MissingPeerError } from '../../lib/adapters/peer.js';

const notFound = (message: string) => Object.assign(new Error(message), { code: 'ERR_MODULE_NOT_FOUND' });
const failing = (error: Error) => () => Promise.reject(error);

describe('importPeer', () => {
  it('names the framework when it is not installed', async () => {
    const error = await importPeer(
      'agent-state-store/langgraph',
      '@langchain/langgraph-checkpoint',
      failing(notFound("Cannot find package '@langchain/langgraph-checkpoint' imported from /app/x.js")),
      ['@langchain/core'],
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MissingPeerError);
    expect((error as MissingPeerError).missing).toBe('@langchain/langgraph-checkpoint');
  });

  it('names the package the framework needs in turn, not the framework found', async () => {
    const cause = notFound(
      "Cannot find package '@langchain/core' imported from /app/node_modules/@langchain/langgraph-checkpoint/dist/index.js",
    );
    const error = await importPeer(
      'agent-state-store/langgraph',
      '@langchain/langgraph-checkpoint',
      failing(cause),
      ['@langchain/core'],
    ).catch((e: unknown) => e);
    expect((error as MissingPeerError).missing).toBe('@langchain/core');
    expect((error as MissingPeerError).message).toMatch(/npm install @langchain\/core\)$/);
    expect((error as MissingPeerError).cause).toBe(cause);
  });

  it('a missing file inside the framework names its package', async () => {
    const error = await importPeer(
      'agent-state-store/strands',
      '@strands-agents/sdk',
      failing(
        notFound(
          "Cannot find module '/app/node_modules/@strands-agents/sdk/dist/storage.js' imported from /app/a.js",
        ),
      ),
    ).catch((e: unknown) => e);
    expect((error as MissingPeerError).missing).toBe('@strands-agents/sdk');
  });

  it('passes through anything else: another missing package, or another failure', async () => {
    const other = notFound(
      "Cannot find package 'left-pad' imported from /app/node_modules/@openai/agents-core/x.js",
    );
    await expect(
      importPeer('agent-state-store/openai-agents', '@openai/agents-core', failing(other)),
    ).rejects.toBe(other);
    const broken = new SyntaxError('Unexpected token');
    await expect(
      importPeer('agent-state-store/openai-agents', '@openai/agents-core', failing(broken)),
    ).rejects.toBe(broken);
    expect(await importPeer('x', 'y', async () => 42)).toBe(42);
  });
});
