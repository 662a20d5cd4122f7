/**
 * AWS Lambda entry point of the scheduled sweep (serverless.yml's `sweep`, an EventBridge schedule,
 * hourly by default): the app's store, built as the API's (S3 + DynamoDB, or the engine the
 * configuration names), swept by lib/lifecycle/sweep.ts. No logic here.
 */
import { loadConfigOrExit } from '../../lib/config.js';
import { createApp } from '../../lib/http/app.js';
import { AWS_BACKENDS } from '../../lib/http/backends/aws.js';
import { cloudParts } from '../../lib/http/backends/cloud.js';
import { runSweep, sweepOptionsOf } from '../../lib/lifecycle/sweep.js';

const config = loadConfigOrExit();
const app = createApp(config, await cloudParts(config, AWS_BACKENDS));

export const handler = () => runSweep(app, sweepOptionsOf(config));
