/**
 * The README's runnable examples: the fenced block between `<!-- example:<name> ... -->` and
 * `<!-- /example -->`, and the output it claims, its `// → <line>` comments in order.
 */
import { readFileSync } from 'node:fs';

export interface ReadmeExample {
  /** The code as written in the README. */
  readonly code: string;
  /** The lines the `// →` comments say it prints. */
  readonly prints: readonly string[];
}

export function readmeExample(name: string, readme = readFileSync('README.md', 'utf8')): ReadmeExample {
  const start = readme.indexOf(`<!-- example:${name}`);
  if (start < 0) throw new Error(`README.md has no <!-- example:${name} --> marker`);
  const end = readme.indexOf('<!-- /example -->', start);
  if (end < 0) throw new Error(`README.md: example ${name} has no <!-- /example --> marker`);
  const block = /\n```[a-z]*\n([\s\S]*?)\n```\n/.exec(readme.slice(start, end));
  if (!block?.[1]) throw new Error(`README.md: example ${name} holds no fenced code block`);
  const code = `${block[1]}\n`;
  const prints = [...code.matchAll(/\/\/ → (.*)$/gm)].map((m) => (m[1] as string).trim());
  return { code, prints };
}
