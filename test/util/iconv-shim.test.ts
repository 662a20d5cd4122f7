/**
 * The iconv-lite stand-in of the Function Compute bundle (scripts/shims/iconv-lite.cjs): what
 * ali-oss's HTTP client asks of it, for a charset Node's Buffer does not know.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const shim = createRequire(import.meta.url)('../../scripts/shims/iconv-lite.cjs') as {
  decode(bytes: Uint8Array, charset: string): string;
  encode(text: string, charset: string): Buffer;
  encodingExists(charset: string): boolean;
  getDecoder(charset: string): { write(bytes: Uint8Array): string; end(): string | undefined };
  getEncoder(charset: string): { write(text: string): Buffer; end(): Buffer | undefined };
};

describe('iconv-lite shim', () => {
  it('decodes UTF-8, whatever the label says of it', () => {
    const xml =
      '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Key>plän/ü</Key></Error>';
    expect(shim.decode(Buffer.from(xml, 'utf8'), 'UTF-8')).toBe(xml);
    expect(shim.decode(Buffer.from(xml, 'utf8'), 'utf8')).toBe(xml);
  });

  it('decodes the charsets the platform knows beyond Buffer (GBK, Shift_JIS)', () => {
    expect(shim.decode(Buffer.from([0xd6, 0xd0, 0xce, 0xc4]), 'gbk')).toBe('中文');
    expect(shim.decode(Buffer.from([0x93, 0xfa, 0x96, 0x7b]), 'shift_jis')).toBe('日本');
    expect(shim.encodingExists('gbk')).toBe(true);
  });

  it("streams as mysql2 asks it to: cesu8 (MySQL's utf8mb3) as UTF-8, a character split across writes", () => {
    const decoder = shim.getDecoder('cesu8');
    const bytes = Buffer.from('plän ü', 'utf8');
    expect(
      decoder.write(bytes.subarray(0, 3)) + decoder.write(bytes.subarray(3)) + (decoder.end() ?? ''),
    ).toBe('plän ü');
    expect(shim.getDecoder('gbk').write(Buffer.from([0xd6, 0xd0]))).toBe('中');
    const encoder = shim.getEncoder('cesu8');
    expect([...encoder.write('é')]).toEqual([0xc3, 0xa9]);
    expect(encoder.end()).toBeUndefined();
  });

  it('reads an unknown charset as UTF-8, and encodes UTF-8', () => {
    expect(shim.encodingExists('x-no-such-charset')).toBe(false);
    expect(shim.decode(Buffer.from('café', 'utf8'), 'x-no-such-charset')).toBe('café');
    expect([...shim.encode('é', 'utf8')]).toEqual([0xc3, 0xa9]);
  });
});
