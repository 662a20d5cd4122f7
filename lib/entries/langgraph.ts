/**
 * `agent-state-store/langgraph`: the LangGraph.js checkpoint saver (`AgentStateSaver`) over the
 * typed client. Needs `@langchain/langgraph-checkpoint` and `@langchain/core` installed (optional
 * peers): without either, importing this entry throws a `MissingPeerError` naming it.
 */
import type * as Checkpointing from '@langchain/langgraph-checkpoint';
import type { AgentStateSaver as Saver } from '../adapters/langgraph.js';
import { agentStateSaverClass } from '../adapters/langgraph.js';
import { requirePeer } from '../adapters/peer.js';

const checkpointing = requirePeer<typeof Checkpointing>(
  'agent-state-store/langgraph',
  '@langchain/langgraph-checkpoint',
  ['@langchain/core'],
);

/** The checkpoint saver: `new AgentStateSaver({ client })`, the client of `agent-state-store/client`. */
export const AgentStateSaver = agentStateSaverClass(checkpointing);
export type AgentStateSaver = Saver;
export type { AgentStateSaverClass, AgentStateSaverOptions } from '../adapters/langgraph.js';
export { MissingPeerError } from '../adapters/peer.js';
