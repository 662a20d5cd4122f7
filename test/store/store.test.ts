import { backends } from '../backends.js';
import { describeStoreSuite } from './store-suite.js';

// memory and fs offer every list format: the suite runs each there; the other backends run their
// default (s3 and RGW: cas; OSS: append).
for (const backend of backends()) {
  if (backend.name === 'memory' || backend.name === 'fs') {
    describeStoreSuite(backend, 'library', 'cas');
    describeStoreSuite(backend, 'library', 'append');
  } else describeStoreSuite(backend);
}
