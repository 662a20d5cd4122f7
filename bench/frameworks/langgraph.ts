/**
 * The LangGraph.js adapter's operations as the bench measures them: `AgentStateSaver`
 * on the typed client, called as LangGraph's loop calls it (`put` of the next checkpoint with its
 * parent's config, `putWrites` of a task, `getTuple` of the latest), and `list` as the state
 * history reads it, with and without a metadata `filter`.
 *
 * Steady state: one thread of `HISTORY` checkpoints (a 20-message conversation growing by one
 * message a step, a plan channel carried over unchanged, one task write per step) written by the
 * saver that then runs the operations, so it knows the thread's index; a second thread whose only
 * `source: 'input'` checkpoint is its first, `FILTERED` checkpoints back.
 */
import type { RunnableConfig } from '@langchain/core/runnables';
import type { Checkpoint } from '@langchain/langgraph-checkpoint';
import type { HttpSessionStore } from '../../lib/client/index.js';
import { AgentStateSaver } from '../../lib/entries/langgraph.js';
import type { FrameworkBench, FrameworkOp } from './types.js';

const HISTORY = 30;
const FILTERED = 200;

/** The checkpoint of superstep `step`: `messages` changed, `plan` carried from step 0. */
function checkpointAt(step: number): { checkpoint: Checkpoint; newVersions: Record<string, number> } {
  const messages = Array.from({ length: 20 }, (_, i) => ({
    role: i % 2 ? 'ai' : 'human',
    content: `Step ${step - 20 + i} moved the cursor and saved. `.repeat(4),
  }));
  return {
    checkpoint: {
      v: 4,
      id: `${String(step).padStart(8, '0')}-bench`,
      ts: new Date(0).toISOString(),
      channel_values: { messages, plan: { steps: ['read', 'edit', 'test'] } },
      channel_versions: { messages: step + 1, plan: 1 },
      versions_seen: { agent: { messages: step } },
    },
    newVersions: step === 0 ? { messages: 1, plan: 1 } : { messages: step + 1 },
  };
}

const metadata = (step: number) => ({
  source: step === 0 ? ('input' as const) : ('loop' as const),
  step,
  parents: {},
});

export const langgraphBench: FrameworkBench = {
  framework: 'LangGraph.js',
  async prepare(client: HttpSessionStore): Promise<FrameworkOp[]> {
    const saver = new AgentStateSaver({ client });
    const run = `bench-${Date.now().toString(36)}`;
    const thread = `${run}-main`;
    let step = 0;
    let config: RunnableConfig = { configurable: { thread_id: thread, checkpoint_ns: '' } };
    const superstep = async () => {
      const { checkpoint, newVersions } = checkpointAt(step);
      config = await saver.put(config, checkpoint, metadata(step), newVersions);
      step++;
      return config;
    };
    const write = () =>
      saver.putWrites(config, [['messages', { role: 'ai', content: `done ${step}` }]], `task-${step}`);
    for (let i = 0; i < HISTORY; i++) {
      await superstep();
      await write();
    }
    const filtered = `${run}-filtered`;
    let f: RunnableConfig = { configurable: { thread_id: filtered, checkpoint_ns: '' } };
    for (let i = 0; i < FILTERED; i++) {
      const { checkpoint, newVersions } = checkpointAt(i);
      f = await saver.put(f, checkpoint, metadata(i), newVersions);
    }
    const latest = { configurable: { thread_id: thread, checkpoint_ns: '' } };
    const drain = async (items: AsyncIterable<unknown>) => {
      let n = 0;
      for await (const _ of items) n++;
      return n;
    };
    return [
      { name: 'put (the next checkpoint)', run: superstep },
      { name: 'putWrites (one task)', run: write },
      { name: 'getTuple (latest)', run: () => saver.getTuple(latest) },
      {
        name: 'getTuple (by id, 10 back)',
        run: () =>
          saver.getTuple({
            configurable: { ...latest.configurable, checkpoint_id: checkpointAt(step - 10).checkpoint.id },
          }),
      },
      { name: 'list (limit 10)', run: () => drain(saver.list(latest, { limit: 10 })) },
      {
        name: `list (filter matching only the first of ${FILTERED}, limit 1)`,
        run: () =>
          drain(
            saver.list(
              { configurable: { thread_id: filtered, checkpoint_ns: '' } },
              { filter: { source: 'input' }, limit: 1 },
            ),
          ),
      },
      {
        name: 'list (limit 10, every namespace)',
        run: () => drain(saver.list({ configurable: { thread_id: thread } }, { limit: 10 })),
      },
      {
        name: 'getTuple (latest) by a new saver (first call on the thread)',
        run: () => new AgentStateSaver({ client }).getTuple(latest),
      },
    ];
  },
};
