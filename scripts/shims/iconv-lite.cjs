// Stands in for iconv-lite in the Function Compute bundle (scripts/build.mjs aliases it): ali-oss's
// HTTP client (urllib) asks iconv-lite only for a response whose charset Node's Buffer does not know,
// and OSS answers UTF-8. iconv-lite's tables are about 480 KiB of the bundle; Node's TextDecoder
// (WHATWG encodings, full ICU) decodes the other charsets, an unknown one as UTF-8. Encoding is
// UTF-8 only. mysql2 (the MySQL engine, in the same bundle) asks for streaming decoders and
// encoders (`getDecoder`, `getEncoder`) for the charsets Buffer does not know: `cesu8`, its name for
// MySQL's utf8mb3, which holds no character outside the BMP and so is UTF-8 byte for byte.
// test/deploy/package.test.ts checks the bundle against the local OSS front,
// test/engines/mysql-sweep.test.ts the FC sweep bundle on MariaDB, and test/util/iconv-shim.test.ts
// this file.
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

/** A streaming decoder (iconv-lite's `write`/`end`), `cesu8` read as UTF-8. */
exports.getDecoder = (charset) => {
  const decoder = decoderFor(String(charset).toLowerCase() === 'cesu8' ? 'utf-8' : charset);
  return { write: (bytes) => decoder.decode(bytes, { stream: true }), end: () => decoder.decode() };
};
/** A streaming encoder: UTF-8, as `encode`. */
exports.getEncoder = () => ({ write: (text) => Buffer.from(String(text), 'utf8'), end: () => undefined });
