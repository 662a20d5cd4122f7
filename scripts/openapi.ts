/** `npm run openapi`: writes openapi.json from the route table and the schemas, and the generated part of docs/http-api.md. */
import { readFile, writeFile } from 'node:fs/promises';
import { openApiDocument } from '../lib/http/openapi.js';
import { API_REFERENCE_FILE, withApiReference } from './api-reference.js';

await writeFile('openapi.json', `${JSON.stringify(openApiDocument(), null, 2)}\n`);
await writeFile(API_REFERENCE_FILE, withApiReference(await readFile(API_REFERENCE_FILE, 'utf8')));
console.log(`wrote openapi.json and the generated part of ${API_REFERENCE_FILE}`);
