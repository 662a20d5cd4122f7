/** `npm run infra`: writes the lifecycle rules into the deployable templates (from lib/lifecycle). */
import { readFile, writeFile } from 'node:fs/promises';
import { lifecycleFromEnv, lifecycleRules, renderCloudFormation, renderRos } from '../lib/lifecycle/index.js';

const config = lifecycleFromEnv();
await writeFile(
  'infra/aws/lifecycle.json',
  `${JSON.stringify(renderCloudFormation(lifecycleRules('s3', config), config.prefix), null, 2)}\n`,
);
const ros = await readFile('infra/aliyun/ros.yaml', 'utf8');
const start = ros.indexOf('# lifecycle:begin');
const end = ros.indexOf('# lifecycle:end');
const indent = '      ';
const rules = JSON.stringify(renderRos(lifecycleRules('oss', config), config.prefix));
await writeFile(
  'infra/aliyun/ros.yaml',
  `${ros.slice(0, start)}# lifecycle:begin\n${indent}LifecycleConfiguration: ${rules}\n${indent}${ros.slice(end)}`,
);
console.log('wrote infra/aws/lifecycle.json and the lifecycle of infra/aliyun/ros.yaml');
