/**
 * The runtime-neutral bytes of lib/util/bytes.ts answer what Node's `Buffer` answers (the ids, the
 * URLs and the chain hash moved onto them), and the chain hash on @noble/hashes is node:crypto's.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chainHash, EMPTY_HASH, leafHash, leafHex, requestDigest } from '../../lib/contract/hash.js';
import {
  concatBytes,
  fromBase64Url,
  fromHex,
  toBase64,
  toBase64Url,
  toHex,
  utf8Bytes,
  utf8Length,
  utf8Text,
} from '../../lib/util/bytes.js';
import { DIGESTS_BY, JS_DIGESTS, md5, sha256 } from '../../lib/util/digests.js';
import { md5Base64, sha256Base64 } from '../../lib/util/web-encoding.js';

/** Strings with any UTF-16 code units: lone surrogates, controls, astral characters. */
const anyString = fc.string({ unit: 'binary', maxLength: 64 });
const anyBytes = fc.uint8Array({ maxLength: 300 });
const body = (text: string) => new TextEncoder().encode(text);

describe('bytes without Buffer', () => {
  it('UTF-8 bytes, text and length are Buffer’s, lone surrogates included', () => {
    fc.assert(
      fc.property(anyString, (text) => {
        expect(Buffer.from(utf8Bytes(text))).toEqual(Buffer.from(text, 'utf8'));
        expect(utf8Length(text)).toBe(Buffer.byteLength(text));
      }),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(anyBytes, (bytes) => {
        expect(utf8Text(bytes)).toBe(Buffer.from(bytes).toString('utf8'));
      }),
    );
    expect(utf8Length('\ud800')).toBe(3);
    expect(utf8Length('😀')).toBe(4);
  });

  it('hex, base64 and base64url are Buffer’s; hex is read as leniently as Buffer reads it', () => {
    fc.assert(
      fc.property(anyBytes, (bytes) => {
        expect(toHex(bytes)).toBe(Buffer.from(bytes).toString('hex'));
        expect(Buffer.from(fromHex(toHex(bytes)))).toEqual(Buffer.from(bytes));
        expect(toBase64(bytes)).toBe(Buffer.from(bytes).toString('base64'));
      }),
    );
    fc.assert(
      fc.property(anyString, (text) => {
        const encoded = Buffer.from(text, 'utf8').toString('base64url');
        expect(toBase64Url(text)).toBe(encoded);
        expect(fromBase64Url(encoded)).toBe(Buffer.from(encoded, 'base64url').toString('utf8'));
      }),
    );
    for (const odd of ['', 'a', 'abz1', 'ab cd', 'ABCDEF0', 'zz'])
      expect(Buffer.from(fromHex(odd))).toEqual(Buffer.from(odd, 'hex'));
    expect(toBase64(new Uint8Array(100_000).fill(255))).toBe(Buffer.alloc(100_000, 255).toString('base64'));
    expect(fromBase64Url('a+b')).toBeUndefined();
    expect(fromBase64Url('abcde')).toBeUndefined();
    expect(concatBytes([new Uint8Array([1]), new Uint8Array([]), new Uint8Array([2, 3])])).toEqual(
      new Uint8Array([1, 2, 3]),
    );
  });

  it('the chain hash, its leaves, request digests and upload digests are node:crypto’s', () => {
    const sha = (...parts: Array<string | Uint8Array>) => {
      const h = createHash('sha256');
      for (const p of parts) h.update(p);
      return h.digest();
    };
    expect(EMPTY_HASH).toBe(`sha256:${sha('').toString('hex')}`);
    const items = [{ b: 1, a: 'x' }, 'é', [null, 2.5]];
    let state = sha('');
    for (const item of items)
      state = sha(state, sha(JSON.stringify(item === items[0] ? { a: 'x', b: 1 } : item)));
    expect(chainHash(EMPTY_HASH, items)).toBe(`sha256:${state.toString('hex')}`);
    expect(Buffer.from(leafHash('é'))).toEqual(sha('"é"'));
    expect(leafHex('é')).toBe(sha('"é"').toString('hex'));
    expect(requestDigest({ z: 1, a: [] })).toBe(sha('{"a":[],"z":1}').toString('hex'));
    // The upload digests; and the plain-JS ones, which answer where there is no node:crypto.
    fc.assert(
      fc.property(anyBytes, (body) => {
        expect(md5Base64(body)).toBe(createHash('md5').update(body).digest('base64'));
        expect(sha256Base64(body)).toBe(createHash('sha256').update(body).digest('base64'));
        expect(Buffer.from(JS_DIGESTS.md5(body))).toEqual(createHash('md5').update(body).digest());
        expect(Buffer.from(JS_DIGESTS.sha256(body))).toEqual(createHash('sha256').update(body).digest());
      }),
    );
    // On Node, node:crypto answers (several times faster on large bodies), as plain Uint8Arrays.
    expect(DIGESTS_BY).toBe('node:crypto');
    expect(Object.getPrototypeOf(sha256(body('x')))).toBe(Uint8Array.prototype);
    expect(Object.getPrototypeOf(md5(body('x')))).toBe(Uint8Array.prototype);
  });
});
