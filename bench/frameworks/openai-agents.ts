/**
 * The OpenAI Agents SDK (JS) adapter's operations as the bench measures them: the
 * `Session` of `agent-state-store/openai-agents` on a conversation of `HISTORY` items, and one
 * whole `run()` turn of an agent (a scripted model answering at once) on it.
 *
 * Steady state: the main session holds `HISTORY` items (user and assistant messages, ~0.5 KB
 * each) and grows by the `addItems`, transaction and `run()` runs; the suffix replacements have a
 * session of `HISTORY` items of their own (each replaces its last item); `popItem` takes from a
 * session of `POOL` items (runs past the pool find nothing: one call), `clearSession` clears one of
 * `POOL` sessions per run.
 */
import {
  Agent,
  type AgentInputItem,
  type Model,
  Runner,
  setTracingDisabled,
  Usage,
} from '@openai/agents-core';
import type { HttpSessionStore } from '../../lib/client/index.js';
import { OpenAIAgentsSession } from '../../lib/entries/openai-agents.js';
import type { FrameworkBench, FrameworkOp } from './types.js';

const HISTORY = 200;
/** Items of the `popItem` session, and sessions for the `clearSession` runs. */
const POOL = 50;

const message = (role: 'user' | 'assistant', text: string): AgentInputItem =>
  role === 'user'
    ? { role, content: [{ type: 'input_text', text }] }
    : { role, status: 'completed', content: [{ type: 'output_text', text }] };

/** `n` alternating user and assistant messages. */
const conversation = (n: number, tag: string): AgentInputItem[] =>
  Array.from({ length: n }, (_, i) =>
    message(
      i % 2 === 0 ? 'user' : 'assistant',
      `${tag} ${i}: ${'the plan moved one step further. '.repeat(14)}`,
    ),
  );

/** A model that answers every request with one assistant message (no network). */
const answering: Model = {
  async getResponse() {
    return {
      usage: new Usage(),
      output: [
        {
          type: 'message',
          id: 'msg_bench',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Done.' }],
        },
      ],
    };
  },
  // biome-ignore lint/correctness/useYield: never called
  async *getStreamedResponse() {
    throw new Error('the bench does not stream');
  },
};

export const openaiAgentsBench: FrameworkBench = {
  framework: 'OpenAI Agents SDK (JS)',
  async prepare(client: HttpSessionStore): Promise<FrameworkOp[]> {
    setTracingDisabled(true);
    const run = `bench-${Date.now().toString(36)}`;
    const session = (sessionId: string) => new OpenAIAgentsSession({ store: client, sessionId });
    const main = session(`${run}-main`);
    await main.addItems(conversation(HISTORY, 'history'));
    const pops = session(`${run}-pop`);
    await pops.addItems(conversation(POOL, 'pop'));
    const pool: OpenAIAgentsSession[] = [];
    for (let i = 0; i < POOL; i++) {
      const s = session(`${run}-clear-${i}`);
      await s.addItems(conversation(20, 'clear'));
      pool.push(s);
    }
    // The suffix replacements' session, and the item the next one expects last.
    const replacing = session(`${run}-replace`);
    let last = message('user', 'replaceable');
    await replacing.addItems([...conversation(HISTORY, 'history'), last]);
    const replayed = {
      operationId: `${run}-replayed`,
      transaction: { type: 'append_items' as const, items: [message('assistant', 'recorded')] },
    };
    await main.applyHistoryTransaction(replayed);
    const agent = new Agent({ name: 'bench', instructions: 'Answer.', model: answering });
    const runner = new Runner({ tracingDisabled: true });
    let n = 0;
    let cleared = 0;
    return [
      { name: 'addItems (1 item)', run: () => main.addItems([message('user', `added ${n++}`)]) },
      { name: 'getItems(50)', run: () => main.getItems(50) },
      { name: `getItems() (${HISTORY}+ items)`, run: () => main.getItems() },
      { name: 'popItem', run: () => pops.popItem() },
      {
        name: 'applyHistoryTransaction (append_items)',
        run: () =>
          main.applyHistoryTransaction({
            operationId: `${run}-append-${n++}`,
            transaction: { type: 'append_items', items: [message('assistant', `committed ${n}`)] },
          }),
      },
      { name: 'applyHistoryTransaction (replay)', run: () => main.applyHistoryTransaction(replayed) },
      {
        name: `applyHistoryTransaction (replace_suffix, ${HISTORY}+ items)`,
        run: async () => {
          const next = message('user', `replaced ${n++}`);
          await replacing.applyHistoryTransaction({
            operationId: `${run}-replace-${n}`,
            transaction: { type: 'replace_suffix', expectedSuffix: [last], replacement: [next] },
          });
          last = next;
        },
      },
      {
        name: 'run() (one turn, no tool)',
        run: () => runner.run(agent, `question ${n++}`, { session: main }),
      },
      {
        name: 'clearSession (20 items)',
        run: () => (pool[cleared++] ?? session(`${run}-none`)).clearSession(),
      },
    ];
  },
};
