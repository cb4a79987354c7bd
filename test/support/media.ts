// Small real media files built in code, so tests that replay pages in a real
// browser have images to draw and a font to render without binary fixtures:
// a PNG of one colour, a WAV of silence, and a TrueType font whose one glyph is a wide box.
import { crc32, deflateSync } from 'node:zlib';

/** A real PNG (RGB, one colour) of the given size: the non-HTML file a browser has to draw. */
export function png(width: number, height: number, rgb: readonly [number, number, number] = [0x2a, 0x2a, 0x2a]): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body) >>> 0);
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const pixels = Buffer.alloc(width * 3);
  for (let x = 0; x < width; x++) pixels.set(rgb, x * 3);
  const row = Buffer.concat([Buffer.from([0]), pixels]);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

/** A real WAV (PCM, 8 kHz, mono, 8-bit) of `ms` of silence: a sound file Chromium plays without any codec of its own. */
export function wav(ms = 250): Buffer {
  const rate = 8_000;
  const data = Buffer.alloc(Math.round((rate * ms) / 1_000), 0x80);
  const head = Buffer.alloc(44);
  head.write('RIFF', 0, 'latin1');
  head.writeUInt32LE(36 + data.length, 4);
  head.write('WAVEfmt ', 8, 'latin1');
  head.writeUInt32LE(16, 16);
  head.writeUInt16LE(1, 20); // PCM
  head.writeUInt16LE(1, 22); // mono
  head.writeUInt32LE(rate, 24);
  head.writeUInt32LE(rate, 28); // bytes a second
  head.writeUInt16LE(1, 32); // block align
  head.writeUInt16LE(8, 34); // bits a sample
  head.write('data', 36, 'latin1');
  head.writeUInt32LE(data.length, 40);
  return Buffer.concat([head, data]);
}

export interface BoxFont {
  /** The font file (TrueType, sfnt version 1.0). */
  ttf: Buffer;
  /** The one character the font draws. */
  char: string;
  /** Its advance width in em: text set in this font is this many font sizes wide per character. */
  advanceEm: number;
}

/**
 * A minimal TrueType font named `family` that maps `char` (one BMP character)
 * to a filled box `advanceEm` em wide; every other character has no glyph.
 * Text in it measures differently from any fallback font, so a page can tell
 * whether the font file was loaded and accepted (Chromium's font sanitiser
 * rejects malformed files, and the text then falls back).
 */
export function boxFont(family: string, char = 'X', advanceEm = 2): BoxFont {
  const upem = 1000;
  const advance = Math.round(advanceEm * upem);
  const code = char.codePointAt(0)!;
  if (code > 0xfffe || char.length !== 1) throw new Error('boxFont draws one BMP character');
  const box = { xMin: 50, yMin: 0, xMax: advance - 50, yMax: 700 };

  const u16 = (...v: number[]) => {
    const b = Buffer.alloc(v.length * 2);
    v.forEach((n, i) => b.writeUInt16BE(n & 0xffff, i * 2));
    return b;
  };
  const u32 = (...v: number[]) => {
    const b = Buffer.alloc(v.length * 4);
    v.forEach((n, i) => b.writeUInt32BE(n >>> 0, i * 4));
    return b;
  };

  // glyph 0 (.notdef) is empty; glyph 1 is the box: one contour, four on-curve points, clockwise.
  const glyph = Buffer.concat([
    u16(1, box.xMin, box.yMin, box.xMax, box.yMax),
    u16(3), // endPtsOfContours
    u16(0), // no instructions
    Buffer.from([1, 1, 1, 1]), // on curve; x and y as 16-bit deltas
    u16(box.xMin, 0, box.xMax - box.xMin, 0),
    u16(0, box.yMax, 0, -box.yMax),
  ]);
  const glyf = glyph;
  const loca = u16(0, 0, glyph.length / 2); // short offsets, in halves

  // cmap: one Windows Unicode BMP subtable (format 4) with the character and the closing 0xFFFF segment.
  const segments = [
    { start: code, end: code, delta: 1 - code },
    { start: 0xffff, end: 0xffff, delta: 1 },
  ];
  const segX2 = segments.length * 2;
  const searchRange = 2 * 2 ** Math.floor(Math.log2(segments.length));
  const format4Body = Buffer.concat([
    u16(...segments.map((s) => s.end)),
    u16(0),
    u16(...segments.map((s) => s.start)),
    u16(...segments.map((s) => s.delta)),
    u16(...segments.map(() => 0)),
  ]);
  const format4 = Buffer.concat([u16(4, 14 + format4Body.length, 0, segX2, searchRange, Math.log2(searchRange / 2), segX2 - searchRange), format4Body]);
  const cmap = Buffer.concat([u16(0, 1), u16(3, 1), u32(12), format4]);

  const head = Buffer.concat([
    u16(1, 0),
    u32(0x00010000), // fontRevision
    u32(0), // checksumAdjustment, set last
    u32(0x5f0f3cf5),
    u16(0b1011, upem), // flags: baseline at y=0, lsb at x=0, integer scaling
    u32(0, 0, 0, 0), // created, modified
    u16(box.xMin, box.yMin, box.xMax, box.yMax),
    u16(0, 8, 2, 0, 0), // macStyle, lowestRecPPEM, fontDirectionHint, short loca, glyphDataFormat
  ]);
  const hhea = Buffer.concat([u32(0x00010000), u16(800, -200, 0, advance, 0, 50, box.xMax, 1, 0, 0, 0, 0, 0, 0, 0, 2)]);
  const hmtx = u16(advance, 0, advance, box.xMin);
  const maxp = Buffer.concat([u32(0x00010000), u16(2, 4, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0)]);
  const post = Buffer.concat([u32(0x00030000, 0), u16(-100, 50), u32(0, 0, 0, 0, 0)]);
  const os2 = Buffer.concat([
    u16(4, advance, 400, 5, 0), // version, xAvgCharWidth, weight, width, fsType
    u16(650, 600, 0, 75, 650, 600, 0, 350, 50, 250, 0), // sub/superscript, strikeout, family class
    Buffer.alloc(10), // panose
    u32(1, 0, 0, 0), // Unicode ranges: Basic Latin
    Buffer.from('TEST', 'latin1'),
    u16(0x40, code, code), // fsSelection REGULAR, first and last character
    u16(800, -200, 0, 800, 200), // typo ascender, descender, line gap; win ascent, descent
    u32(1, 0), // code page Latin 1
    u16(500, 700, 0, 32, 1), // x-height, cap height, default char, break char, max context
  ]);

  const names: [number, string][] = [
    [1, family],
    [2, 'Regular'],
    [3, `${family} test font`],
    [4, family],
    [6, family.replace(/[^\x21-\x7e]|[[\](){}<>/%]/g, '')],
  ];
  const strings = names.map(([, s]) => Buffer.from(s, 'utf16le').swap16());
  let at = 0;
  const records = names.map(([id], i) => {
    const rec = u16(3, 1, 0x0409, id, strings[i].length, at);
    at += strings[i].length;
    return rec;
  });
  const name = Buffer.concat([u16(0, names.length, 6 + 12 * names.length), ...records, ...strings]);

  const tables: [string, Buffer][] = [
    ['OS/2', os2],
    ['cmap', cmap],
    ['glyf', glyf],
    ['head', head],
    ['hhea', hhea],
    ['hmtx', hmtx],
    ['loca', loca],
    ['maxp', maxp],
    ['name', name],
    ['post', post],
  ];
  const checksum = (b: Buffer) => {
    const padded = Buffer.concat([b, Buffer.alloc((4 - (b.length % 4)) % 4)]);
    let sum = 0;
    for (let i = 0; i < padded.length; i += 4) sum = (sum + padded.readUInt32BE(i)) >>> 0;
    return sum;
  };
  const entrySelector = Math.floor(Math.log2(tables.length));
  const dirSearchRange = 2 ** entrySelector * 16;
  const header = Buffer.concat([u32(0x00010000), u16(tables.length, dirSearchRange, entrySelector, tables.length * 16 - dirSearchRange)]);
  let offset = header.length + tables.length * 16;
  const directory: Buffer[] = [];
  const bodies: Buffer[] = [];
  let headOffset = 0;
  for (const [tag, data] of tables) {
    if (tag === 'head') headOffset = offset;
    directory.push(Buffer.concat([Buffer.from(tag, 'latin1'), u32(checksum(data), offset, data.length)]));
    const padded = Buffer.concat([data, Buffer.alloc((4 - (data.length % 4)) % 4)]);
    bodies.push(padded);
    offset += padded.length;
  }
  const ttf = Buffer.concat([header, ...directory, ...bodies]);
  ttf.writeUInt32BE((0xb1b0afba - checksum(ttf)) >>> 0, headOffset + 8);
  return { ttf, char, advanceEm };
}
