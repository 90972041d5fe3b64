// Random hex for what only has to differ from its neighbours (a temp file's name, an episode's
// id), not stay secret: from Math.random, which V8 seeds from the operating system. node:crypto
// would do as well and costs 2-10 ms to load, which a write command otherwise never pays.

/** `bytes` random bytes (at most 6) as lowercase hex. */
export function uniqueHex(bytes: number): string {
  return Math.floor(Math.random() * 2 ** (8 * bytes))
    .toString(16)
    .padStart(2 * bytes, '0');
}
