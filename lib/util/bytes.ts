/**
 * Bytes and text with what every runtime has (TextEncoder, TextDecoder, btoa, atob): UTF-8, hex,
 * base64 and base64url. The contract, the protocol and the universal client use these, never
 * Node's `Buffer`, so that the client runs in browsers and workers too.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The UTF-8 bytes of a string (a lone surrogate becomes U+FFFD, as `Buffer.from` does). */
export const utf8Bytes = (text: string): Uint8Array => encoder.encode(text);

/** The string of UTF-8 bytes (an invalid sequence becomes U+FFFD, as `Buffer.toString` does). */
export const utf8Text = (bytes: Uint8Array): string => decoder.decode(bytes);

/** The UTF-8 length of a string in bytes, without encoding it (`Buffer.byteLength`'s answer). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Lower-case hex of bytes. */
export function toHex(bytes: Uint8Array): string {
  let out = '';
  for (const byte of bytes) out += HEX[byte];
  return out;
}

/**
 * The bytes of a hex string, read as `Buffer.from(hex, 'hex')` reads it: pair by pair, up to the
 * first pair that is not hex (a trailing odd digit is dropped).
 */
export function fromHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length >> 1);
  let n = 0;
  for (; n < out.length; n++) {
    const high = nibble(hex.charCodeAt(2 * n));
    const low = nibble(hex.charCodeAt(2 * n + 1));
    if (high < 0 || low < 0) break;
    out[n] = (high << 4) | low;
  }
  return n === out.length ? out : out.subarray(0, n);
}

/** The value of a hex digit's char code, or -1. */
function nibble(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  if (code >= 65 && code <= 70) return code - 55;
  return -1;
}

/** Base64 (padded, `+` and `/`) of bytes. */
export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  // In slices: String.fromCharCode takes its arguments on the stack.
  for (let i = 0; i < bytes.length; i += 0x8000)
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** Unpadded base64url of a string's UTF-8 bytes. */
export function toBase64Url(text: string): string {
  return toBase64(utf8Bytes(text)).replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_');
}

/**
 * The string whose UTF-8 bytes a base64url text encodes (padded or not), or undefined when it is
 * not base64url. Invalid UTF-8 becomes U+FFFD: a caller that needs the exact form checks that the
 * answer encodes back to its input.
 */
export function fromBase64Url(text: string): string | undefined {
  if (!/^[A-Za-z0-9_-]*={0,2}$/.test(text)) return undefined;
  try {
    const binary = atob(text.replace(/=+$/, '').replace(/-/g, '+').replace(/_/g, '/'));
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return utf8Text(bytes);
  } catch {
    return undefined;
  }
}

/** The bytes of several chunks, in one array. */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}
