/**
 * Ids in URLs. API Gateway decodes `%2F` before routing, so an id is written as itself when made only
 * of the characters of `PLAIN_ID` (and not `.` or `..`), or as `~` + the unpadded base64url of its
 * UTF-8 bytes. Any other segment is refused (400).
 */
import { ValidationError } from '../contract/errors.js';
import { BASE64URL, PLAIN_ID } from '../contract/ids.js';

const plain = (id: string) => PLAIN_ID.test(id) && id !== '.' && id !== '..';

/** The URL form of an id. */
export function encodeUrlId(id: string): string {
  return plain(id) ? id : `~${Buffer.from(id, 'utf8').toString('base64url')}`;
}

/** The id a URL segment names; `ValidationError` (naming `field`) when it is not a valid form. */
export function decodeUrlId(segment: string, field: string): string {
  if (segment.startsWith('~')) {
    const body = segment.slice(1);
    if (body.length > 0 && BASE64URL.test(body)) {
      const id = Buffer.from(body, 'base64url').toString('utf8');
      // Reject anything that does not round-trip: padding, stray bits, invalid UTF-8.
      if (Buffer.from(id, 'utf8').toString('base64url') === body && encodeUrlId(id) === segment) return id;
    }
  } else if (plain(segment)) return segment;
  throw new ValidationError(field, 'not a valid id segment (plain letters, digits, . _ - or ~base64url)');
}
