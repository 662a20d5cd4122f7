/**
 * The generated parts of infra/aliyun/ros.yaml, from lib/lifecycle/deployment.ts: the deployment
 * parameters, the rules across them, the functions' environment for them and the bucket's
 * lifecycle rules (the custom resource's, in ali-oss's shape) as intrinsic functions of them. Each lives between `# <name>:begin` and
 * `# <name>:end` comment lines and is written at the begin marker's indentation, so writing the
 * blocks into a template that already holds them changes nothing (`npm run infra` on a clean
 * checkout leaves it clean; a test checks the committed template is up to date).
 */
import yaml from 'js-yaml';
import { rosEnvironment, rosLifecycleRules, rosParameters, rosRules } from '../lib/lifecycle/deployment.js';

/** The generated blocks, by marker name. */
export function rosBlocks(): Record<string, unknown> {
  return {
    'deployment-parameters': rosParameters(),
    'deployment-rules': rosRules(),
    'deployment-environment': rosEnvironment(),
    'lifecycle-rules': { Rules: rosLifecycleRules() },
  };
}

/** The template with every generated block (re)written; throws when a marker is missing. */
export function writeRosBlocks(template: string, blocks: Record<string, unknown> = rosBlocks()): string {
  let out = template;
  for (const [name, value] of Object.entries(blocks)) {
    const begin = new RegExp(`^( *)# ${name}:begin\\n`, 'm').exec(out);
    const end = out.indexOf(`# ${name}:end`, begin ? begin.index : 0);
    if (!begin || end < 0) throw new Error(`ros.yaml: no "# ${name}:begin" / "# ${name}:end" markers`);
    const indent = begin[1] ?? '';
    const body = yaml
      .dump(value, { lineWidth: 100, noRefs: true, quotingType: '"' })
      .trimEnd()
      .split('\n')
      .map((line) => `${indent}${line}`)
      .join('\n');
    const from = begin.index + begin[0].length;
    out = `${out.slice(0, from)}${body}\n${indent}${out.slice(end)}`;
  }
  return out;
}
