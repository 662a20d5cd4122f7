/** The adapters' optional peers: loaded as lib/util/peer.ts loads any optional peer (the engines' too). */
export { loadModule, MissingPeerError, requirePeer } from '../util/peer.js';
