/**
 * The LangGraph.js memory store's operations as the bench measures them:
 * `AgentStateMemoryStore` on the typed client, called as a graph's nodes call their `store`
 * (`search` of a user's memories, `get` of one, `put` of a new one and of one read before,
 * `listNamespaces`).
 *
 * Steady state: `memories` memories of one user (`["memories", "u0"]`, small JSON values, one in
 * three a preference) and `users` other users' namespaces of 3 memories each, written by the store
 * that then runs the operations (so it knows the versions of what it wrote).
 */
import type { HttpSessionStore } from '../../lib/client/index.js';
import { AgentStateMemoryStore } from '../../lib/entries/langgraph.js';
import type { FrameworkBench, FrameworkOp } from './types.js';

const memory = (i: number) => ({
  text: `The user mentioned preference number ${i}: ${'likes concise answers. '.repeat(3)}`,
  kind: i % 3 === 0 ? 'preference' : 'fact',
  at: i,
});

/** The bench at a size: `memories` of the user searched (at least 60), `users` other namespaces. */
export const langgraphStoreBenchOf = ({
  memories,
  users,
}: {
  memories: number;
  users: number;
}): FrameworkBench => ({
  framework: 'LangGraph.js (memory store)',
  async prepare(client: HttpSessionStore): Promise<FrameworkOp[]> {
    const store = new AgentStateMemoryStore({ client });
    const mine = ['memories', 'u0'];
    for (let i = 0; i < memories; i++) await store.put(mine, `m${String(i).padStart(4, '0')}`, memory(i));
    for (let u = 1; u <= users; u++)
      for (let i = 0; i < 3; i++) await store.put(['memories', `u${u}`], `m${i}`, memory(i));
    let next = memories;
    return [
      { name: 'search (limit 10)', run: () => store.search(mine, { limit: 10 }) },
      { name: 'search (limit 10, offset 50)', run: () => store.search(mine, { limit: 10, offset: 50 }) },
      {
        name: `search (filter, limit 10, of ${memories})`,
        run: () => store.search(mine, { filter: { kind: 'preference' }, limit: 10 }),
      },
      { name: 'get', run: () => store.get(mine, 'm0042') },
      {
        name: 'put (a new item)',
        run: () => store.put(mine, `m${String(next++).padStart(4, '0')}`, memory(next)),
      },
      { name: 'put (an item read before)', run: () => store.put(mine, 'm0042', memory(next++)) },
      {
        name: `listNamespaces (${users + 1} namespaces)`,
        run: () => store.listNamespaces({ prefix: ['memories'] }),
      },
    ];
  },
});

/** As `npm run bench` runs it: 100 memories, 20 other users. */
export const langgraphStoreBench = langgraphStoreBenchOf({ memories: 100, users: 20 });
