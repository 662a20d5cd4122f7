/**
 * The Strands Agents (TS) adapter's operations as the bench measures them: the SDK's own
 * `SessionManager` on `createStrandsStorage(client)`, saving and reading snapshots of a real
 * `Agent` holding a 20-message conversation, and the storage's `list` above the sessions.
 *
 * Steady state: one session whose agent has the latest snapshot and 20 immutable ones, 10 more
 * sessions with a latest snapshot each, and `DELETE_POOL` sessions holding the latest and two
 * immutable snapshots, one deleted per `deleteSession` run (runs past the pool find nothing to
 * delete: one call).
 */
import { Agent, type BaseModelConfig, Message, Model, SessionManager, TextBlock } from '@strands-agents/sdk';
import { createStrandsStorage } from '../../lib/adapters/strands.js';
import type { HttpSessionStore } from '../../lib/client/index.js';
import type { FrameworkBench, FrameworkOp } from './types.js';

/** Sessions prepared for the `deleteSession` runs. */
const DELETE_POOL = 50;
const HISTORY = 20;
const OTHER_SESSIONS = 10;

/** The agent's model: the bench saves and restores snapshots, it never invokes the agent. */
class IdleModel extends Model<BaseModelConfig> {
  private config: BaseModelConfig = { modelId: 'idle' };
  updateConfig(config: BaseModelConfig): void {
    this.config = { ...this.config, ...config };
  }
  getConfig(): BaseModelConfig {
    return this.config;
  }
  // biome-ignore lint/correctness/useYield: never called
  async *stream(): AsyncGenerator<never> {
    throw new Error('the bench never invokes the agent');
  }
}

/** An agent whose conversation has `turns` user and assistant messages each. */
function agentWith(turns: number): Agent {
  const messages: Message[] = [];
  for (let i = 0; i < turns; i++) {
    messages.push(
      new Message({ role: 'user', content: [new TextBlock(`Question ${i}: what changed in step ${i}?`)] }),
    );
    messages.push(
      new Message({
        role: 'assistant',
        content: [new TextBlock(`Step ${i} moved the cursor and saved. `.repeat(8))],
      }),
    );
  }
  return new Agent({ id: 'assistant', model: new IdleModel(), printer: false, messages });
}

export const strandsBench: FrameworkBench = {
  framework: 'Strands Agents (TS)',
  async prepare(client: HttpSessionStore): Promise<FrameworkOp[]> {
    const storage = createStrandsStorage(client);
    const run = `bench-${Date.now().toString(36)}`;
    const agent = agentWith(10);
    const manager = (sessionId: string) => new SessionManager({ sessionId, storage });
    const main = manager(`${run}-main`);
    await main.saveSnapshot({ target: agent, isLatest: true });
    for (let i = 0; i < HISTORY; i++) await main.saveSnapshot({ target: agent, isLatest: false });
    for (let i = 0; i < OTHER_SESSIONS; i++)
      await manager(`${run}-other-${i}`).saveSnapshot({ target: agent, isLatest: true });
    const pool: SessionManager[] = [];
    for (let i = 0; i < DELETE_POOL; i++) {
      const m = manager(`${run}-gone-${i}`);
      await m.saveSnapshot({ target: agent, isLatest: true });
      await m.saveSnapshot({ target: agent, isLatest: false });
      await m.saveSnapshot({ target: agent, isLatest: false });
      pool.push(m);
    }
    const restored = agentWith(0);
    let next = 0;
    return [
      { name: 'saveSnapshot (latest)', run: () => main.saveSnapshot({ target: agent, isLatest: true }) },
      { name: 'saveSnapshot (immutable)', run: () => main.saveSnapshot({ target: agent, isLatest: false }) },
      { name: 'restoreSnapshot (latest)', run: () => main.restoreSnapshot({ target: restored }) },
      {
        name: 'listSnapshotIds (limit 10)',
        run: () => main.listSnapshotIds({ target: agent, limit: 10 }),
      },
      {
        name: 'Storage.read',
        run: () => storage.read(`session/${run}-main/scopes/agent/assistant/snapshots/snapshot_latest.json`),
      },
      {
        name: `Storage.list (session/, ${1 + OTHER_SESSIONS + DELETE_POOL} sessions)`,
        run: () => storage.list('session/'),
      },
      {
        name: 'deleteSession (latest + 2 immutable)',
        run: () => (pool[next++] ?? manager(`${run}-gone-none`)).deleteSession(),
      },
    ];
  },
};
