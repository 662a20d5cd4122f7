/** Revisions over HTTP (revisions-suite.ts) through each adapter, on memory. */
import { contractHarnesses, memoryBackend } from './harness.js';
import { revisionsSuite } from './revisions-suite.js';

for (const h of contractHarnesses(memoryBackend)) revisionsSuite(h);
