/** The store suite through the typed client -> local HTTP server -> fs driver. */
import { backends } from '../backends.js';
import { describeStoreSuite } from './store-suite.js';

const fs = backends().find((b) => b.name === 'fs');
if (fs) describeStoreSuite(fs, 'http');
