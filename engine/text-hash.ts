import { sha1 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';

// Hashes of short texts (content hashes, cache keys, edit records) in JavaScript. node:crypto
// takes 2-10 ms to load, which `svc learn` and the hooks run on every tool call would otherwise
// pay for a hash or two; these are the same digests.

/** SHA-256 of the text's UTF-8 bytes, as lowercase hex. */
export const sha256Hex = (text: string): string => bytesToHex(sha256(utf8ToBytes(text)));

/** SHA-1 of the text's UTF-8 bytes, as lowercase hex: for stable short names, never for security. */
export const sha1Hex = (text: string): string => bytesToHex(sha1(utf8ToBytes(text)));
