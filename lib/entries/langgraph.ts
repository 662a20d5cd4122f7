/**
 * `agent-state-store/langgraph`: the LangGraph.js checkpoint saver (`AgentStateSaver`) over the
 * typed client. Needs `@langchain/langgraph-checkpoint` and `@langchain/core` installed (optional
 * peers): without either, importing this entry throws a `MissingPeerError` naming it. The memory
 * store (`AgentStateMemoryStore`), LangGraph's long-term memory, is made the same way.
 */
import type * as Checkpointing from '@langchain/langgraph-checkpoint';
import type { AgentStateSaver as Saver } from '../adapters/langgraph.js';
import { agentStateSaverClass } from '../adapters/langgraph.js';
import type { AgentStateMemoryStore as MemoryStore } from '../adapters/langgraph-store.js';
import { agentStateMemoryStoreClass } from '../adapters/langgraph-store.js';
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
/** The long-term memory store: `new AgentStateMemoryStore({ client })`, items in the user's memory session. */
export const AgentStateMemoryStore = agentStateMemoryStoreClass(checkpointing);
export type AgentStateMemoryStore = MemoryStore;
export type {
  AgentStateMemoryStoreClass,
  AgentStateMemoryStoreOptions,
} from '../adapters/langgraph-store.js';
export { MissingPeerError } from '../adapters/peer.js';
export { UnsupportedOperationError } from '../contract/errors.js';
export { MEMORY_SESSION } from '../contract/ids.js';
