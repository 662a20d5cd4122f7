/**
 * Function Compute 3.0 entry point of the scheduled sweep (infra/aliyun/ros.yaml's `SweepFunction`,
 * a timer trigger, hourly by default): the app's store, built as the API's (OSS + the DynamoDB
 * lock, or the engine the configuration names), swept by lib/lifecycle/sweep.ts. No logic here.
 */
import { loadConfigOrExit } from '../../lib/config.js';
import { createApp } from '../../lib/http/app.js';
import { ALIYUN_BACKENDS } from '../../lib/http/backends/aliyun.js';
import { cloudParts } from '../../lib/http/backends/cloud.js';
import { runSweep, sweepOptionsOf } from '../../lib/lifecycle/sweep.js';

const config = loadConfigOrExit();
const app = createApp(config, await cloudParts(config, ALIYUN_BACKENDS));

export const handler = () => runSweep(app, sweepOptionsOf(config));
