/**
 * Ids in URLs. API Gateway decodes `%2F` before routing, so an id is written as itself when made only
 * of the characters of `PLAIN_ID` (and not `.` or `..`), or as `~` + the unpadded base64url of its
 * UTF-8 bytes. Any other segment is refused (400).
 */
import { ValidationError } from '../contract/errors.js';
import { BASE64URL, PLAIN_ID } from '../contract/ids.js';
import { fromBase64Url, toBase64Url } from '../util/bytes.js';

const plain = (id: string) => PLAIN_ID.test(id) && id !== '.' && id !== '..';

/** The URL form of an id. */
export function encodeUrlId(id: string): string {
  return plain(id) ? id : `~${toBase64Url(id)}`;
}

/** The id a URL segment names; `ValidationError` (naming `field`) when it is not a valid form. */
export function decodeUrlId(segment: string, field: string): string {
  if (segment.startsWith('~')) {
    const body = segment.slice(1);
    if (body.length > 0 && BASE64URL.test(body)) {
      const id = fromBase64Url(body);
      // Reject anything that does not round-trip: padding, stray bits, invalid UTF-8.
      if (id !== undefined && toBase64Url(id) === body && encodeUrlId(id) === segment) return id;
    }
  } else if (plain(segment)) return segment;
  throw new ValidationError(field, 'not a valid id segment (plain letters, digits, . _ - or ~base64url)');
}
