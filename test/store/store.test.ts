import { backends } from '../backends.js';
import { describeStoreSuite } from './store-suite.js';

for (const backend of backends()) describeStoreSuite(backend);
