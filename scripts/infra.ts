/**
 * `npm run infra`: writes the deployment parameters, their rules, the functions' environment and
 * the lifecycle rules into infra/aliyun/ros.yaml (from lib/lifecycle/deployment.ts; see
 * scripts/ros-template.ts). The AWS rules need no file: osls renders them from the stack
 * parameters at package time (infra/aws/deployment.cjs).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { writeRosBlocks } from './ros-template.js';

const file = 'infra/aliyun/ros.yaml';
const before = await readFile(file, 'utf8');
const after = writeRosBlocks(before);
if (after !== before) await writeFile(file, after);
console.log(after === before ? `${file} is up to date` : `wrote the generated blocks of ${file}`);
