/**
 * `agent-state-store/client/node`: everything `agent-state-store/client` exports, with the Node
 * client in place of the universal one: `createHttpClient` here returns a `NodeHttpSessionStore`
 * (workspaces from and into files, brotli, direct downloads of the bytes as stored). Loads node:
 * modules; the universal entry loads none.
 */

export { createHttpClient, type NodeHttpSessionStore } from '../client/node/index.js';
export * from './client.js';
