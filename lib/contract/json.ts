/**
 * Request bodies are I-JSON (RFC 7493), the subset RFC 8785 canonical JSON (and so the list chain
 * hash) assumes: UTF-8 without invalid sequences, no lone surrogates in strings or member names, no
 * duplicate member names, no number beyond an IEEE 754 double, and (for canonical hashing and
 * storage, which recurse) at most MAX_DEPTH levels of nesting. The value is JSON.parse's, which
 * keeps every member name (`__proto__` included) as an own property.
 */
import { utf8Length } from '../util/bytes.js';
import { ValidationError } from './errors.js';

/** Deepest nesting of arrays and objects a body may have. */
export const MAX_DEPTH = 128;

/** UTF-8 that throws on invalid sequences; a byte order mark is kept, so JSON.parse refuses it. */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A lone surrogate code unit (unpaired high or low). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** An escape that may decode to a surrogate (`\\ud800` gives false positives, rechecked decoded). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/** Characters after the first of a JSON number: digits, `.`, `e`, `E`, `+`, `-`. */
const NUMBER_CHARS = new Set([...'0123456789.eE+-'].map((ch) => ch.charCodeAt(0)));

/**
 * Parses an I-JSON body; throws `ValidationError` whose field is `body` or the dotted path of the
 * offending value (`body.items.3.name`).
 */
export function parseIJson(bytes: Uint8Array): unknown {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new ValidationError('body', 'is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ValidationError('body', 'is not valid JSON');
  }
  checkIJson(text);
  return value;
}

/**
 * Checks text that JSON.parse accepted for what JSON allows and I-JSON does not. One pass without
 * recursion: per open container, its path segment (member name or index) and, for an object, the
 * member names seen.
 */
function checkIJson(text: string): void {
  const path: Array<string | number> = [];
  const names: Array<Set<string> | undefined> = [];
  /** The field of the value at `depth` (default the current one). */
  const at = (depth = path.length) => ['body', ...path.slice(0, depth)].join('.');
  let expectName = false;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) {
      // { or [
      if (names.length === MAX_DEPTH)
        throw new ValidationError(at(), `is nested deeper than ${MAX_DEPTH} levels`);
      names.push(c === 0x7b ? new Set() : undefined);
      path.push(c === 0x7b ? '' : 0);
      expectName = c === 0x7b;
      i++;
    } else if (c === 0x7d || c === 0x5d) {
      // } or ]
      names.pop();
      path.pop();
      expectName = false;
      i++;
    } else if (c === 0x2c) {
      // , moves to the next member name or element
      const top = path.length - 1;
      if (names[top]) expectName = true;
      else path[top] = (path[top] as number) + 1;
      i++;
    } else if (c === 0x22) {
      let end = i + 1;
      let escaped = false;
      for (let d = text.charCodeAt(end); d !== 0x22; d = text.charCodeAt(end)) {
        if (d === 0x5c) {
          escaped = true;
          end += 2;
        } else end++;
      }
      end++;
      if (expectName) {
        const name = escaped ? (JSON.parse(text.slice(i, end)) as string) : text.slice(i + 1, end - 1);
        if (escaped && LONE_SURROGATE.test(name))
          throw new ValidationError(at(path.length - 1), 'has a member name with a lone surrogate');
        const seen = names[names.length - 1] as Set<string>;
        path[path.length - 1] = name;
        if (seen.has(name)) throw new ValidationError(at(), 'is a duplicate member name');
        seen.add(name);
        expectName = false;
      } else if (escaped) {
        const literal = text.slice(i, end);
        if (SURROGATE_ESCAPE.test(literal) && LONE_SURROGATE.test(JSON.parse(literal) as string))
          throw new ValidationError(at(), 'has a lone surrogate');
      }
      i = end;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let end = i + 1;
      let exponent = -1;
      for (let d = text.charCodeAt(end); NUMBER_CHARS.has(d); d = text.charCodeAt(end)) {
        if (d === 0x65 || d === 0x45) exponent = end;
        end++;
      }
      // At most 200 characters with an exponent below e+100 stay below 1e299: only others can overflow.
      const suspect = (exponent >= 0 && end - exponent > 3) || end - i > 200;
      if (suspect && !Number.isFinite(Number(text.slice(i, end))))
        throw new ValidationError(at(), 'is a number beyond the range of an IEEE 754 double');
      i = end;
    } else i++;
  }
}

/** The JSON text of a value as the store writes it; `ValidationError` for what is not JSON. */
export function jsonBody(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new ValidationError('value', 'must be a JSON value');
  return text;
}

/** Refuses items that are not an array of `min` to `max` JSON values of at most `maxItemBytes` each (every engine's rule). */
export function checkItems(items: unknown, min: number, max: number, maxItemBytes: number): void {
  if (!Array.isArray(items)) throw new ValidationError('items', 'must be an array');
  if (items.length < min || items.length > max)
    throw new ValidationError('items', `must hold ${min} to ${max} items`);
  for (const item of items) {
    if (utf8Length(jsonBody(item)) > maxItemBytes)
      throw new ValidationError('items', `an item is over ${maxItemBytes} bytes (maxValueBytes)`);
  }
}
