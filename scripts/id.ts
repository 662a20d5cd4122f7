/** `npm run id -- <id>`: prints the URL form of a session id, key or archive id. */
import { encodeUrlId } from '../lib/protocol/url-ids.js';

const id = process.argv[2];
if (id === undefined) {
  console.error('usage: npm run id -- <id>');
  process.exit(2);
}
console.log(encodeUrlId(id));
