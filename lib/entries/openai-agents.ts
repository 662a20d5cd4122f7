/**
 * `agent-state-store/openai-agents`: the OpenAI Agents SDK (JS) `Session` on the store.
 * `@openai/agents-core` is an optional peer: importing this entry without it installed throws a
 * `MissingPeerError` naming the package.
 *
 * ```ts
 * const session = new OpenAIAgentsSession({ store: createHttpClient({ baseUrl, token }), sessionId });
 * await run(agent, 'hello', { session });
 * ```
 */
import type * as AgentsCore from '@openai/agents-core';
import {
  type OpenAIAgentsSessionOptions,
  OpenAIAgentsSession as StoreSession,
} from '../adapters/openai-agents.js';
import { requirePeer } from '../adapters/peer.js';

export { MissingPeerError } from '../adapters/peer.js';
export type { OpenAIAgentsSessionOptions };

const core = requirePeer<typeof AgentsCore>('agent-state-store/openai-agents', '@openai/agents-core');

/**
 * The SDK's `Session` (with `applyHistoryTransaction`) on one store session: its items are one
 * list, written by conditional appends and truncates; big items are values of their own.
 */
export class OpenAIAgentsSession extends StoreSession {
  constructor(options: OpenAIAgentsSessionOptions) {
    super(options, core);
  }
}
