/** `npm run openapi`: writes openapi.json from the route table and the schemas. */
import { writeFile } from 'node:fs/promises';
import { openApiDocument } from '../lib/http/openapi.js';

await writeFile('openapi.json', `${JSON.stringify(openApiDocument(), null, 2)}\n`);
console.log('wrote openapi.json');
