// The Redis Cluster hash slot of a key (the cluster specification's CRC16,
// XMODEM variant, of the key's hash tag if it has one, modulo 16384): which
// keys one script may touch together on a cluster. Computed here rather than
// asked of a cluster: a single Redis has no slots, yet the crawler's calls are
// shaped for one (src/redis/keys.ts).

/** Hash slots of a Redis Cluster. */
export const KEY_SLOTS = 16_384;

const TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let b = 0; b < 8; b++) c = c & 0x8000 ? (c << 1) ^ 0x1021 : c << 1;
    t[i] = c & 0xffff;
  }
  return t;
})();

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc;
}

/**
 * The slot of `key`: of what lies between its first `{` and the first `}` after it when that is
 * not empty (the hash tag), else of the whole key; of its UTF-8 bytes.
 */
export function keySlot(key: string): number {
  const bytes = Buffer.from(key, 'utf8');
  const open = bytes.indexOf(0x7b);
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) return crc16(bytes.subarray(open + 1, close)) % KEY_SLOTS;
  }
  return crc16(bytes) % KEY_SLOTS;
}
