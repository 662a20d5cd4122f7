// Stands in for iconv-lite in the Function Compute bundle (scripts/build.mjs aliases it): ali-oss's
// HTTP client (urllib) asks iconv-lite only for a response whose charset Node's Buffer does not know,
// and OSS answers UTF-8. iconv-lite's tables are about 480 KiB of the bundle; Node's TextDecoder
// (WHATWG encodings, full ICU) decodes the other charsets, an unknown one as UTF-8. Encoding is
// UTF-8 only. test/deploy/package.test.ts checks the bundle against the local OSS front, and
// test/util/iconv-shim.test.ts this file.
'use strict';

/** A decoder for `charset`, or UTF-8's when the platform does not know it. */
function decoderFor(charset) {
  try {
    return new TextDecoder(String(charset));
  } catch {
    return new TextDecoder('utf-8');
  }
}

exports.decode = (bytes, charset) => decoderFor(charset).decode(bytes);
exports.encode = (text) => Buffer.from(String(text), 'utf8');
exports.encodingExists = (charset) => {
  try {
    new TextDecoder(String(charset));
    return true;
  } catch {
    return false;
  }
};
