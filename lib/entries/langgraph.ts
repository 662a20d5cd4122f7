/**
 * `agent-state-store/langgraph`: the LangGraph.js checkpoint saver (`AgentStateSaver`) over the
 * typed client. Needs `@langchain/langgraph-checkpoint` installed (an optional peer): without it,
 * importing this entry throws a `MissingPeerError` naming the package.
 */
import type { AgentStateSaver as Saver } from '../adapters/langgraph.js';
import { agentStateSaverClass } from '../adapters/langgraph.js';
import { importPeer } from '../adapters/peer.js';

const checkpointing = await importPeer(
  'agent-state-store/langgraph',
  '@langchain/langgraph-checkpoint',
  () => import('@langchain/langgraph-checkpoint'),
);

/** The checkpoint saver: `new AgentStateSaver({ client })`, the client of `agent-state-store/client`. */
export const AgentStateSaver = agentStateSaverClass(checkpointing);
export type AgentStateSaver = Saver;
export type { AgentStateSaverClass, AgentStateSaverOptions } from '../adapters/langgraph.js';
export { MissingPeerError } from '../adapters/peer.js';
