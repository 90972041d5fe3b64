import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { ENGRAMS_DIR, MANIFEST_FILE, type PackFolder, type PackManifest } from './format.js';
import { canonicalJson } from '../../canonical-json.js';

// Pack signatures (Ed25519, node:crypto). The integrity hash only says the files match what the
// manifest declares, and anyone can recompute it; a signature says who declared it.
//
//   manifest   signer: ed25519:<base64url of the 32-byte public key>
//              signature: Ed25519 over the canonical JSON of every other manifest field (so
//              over the integrity hash, and with it every engram file, plus name and version)
//   engram     provenance.signature: ed25519:<signer>:<signature>, Ed25519 over the canonical
//              JSON of the engram file with provenance.signature left out; it travels with
//              the engram when an installer keeps it.
//
// A pack is `trusted` when it verifies and its signer is a key the user trusts (their own
// key, or one added with `svc packs trust`), `untrusted` when it verifies under another key,
// `unsigned` without signer and signature, and `invalid` when anything fails to verify:
// install refuses invalid packs always, and unsigned or untrusted ones unless told to allow them.

export const KEY_PREFIX = 'ed25519:';
const KEY_SHAPE = /^ed25519:[A-Za-z0-9_-]{43}$/;
const ENGRAM_SIGNATURE = /^ed25519:([A-Za-z0-9_-]{43}):([A-Za-z0-9_-]{86})$/;

export type SignatureStatus = 'trusted' | 'untrusted' | 'unsigned' | 'invalid';

export interface PackSignatureCheck {
  status: SignatureStatus;
  /** The signer's public key as the manifest names it (null when unsigned). */
  signer: string | null;
  /** Who the trusted signer is: "you" for your own key, else the label it was trusted with. */
  signer_label: string | null;
  /** Why it is invalid (empty otherwise). */
  problems: string[];
}

export interface TrustedKey {
  key: string;
  label: string;
  /** The key this store signs its own exports with. */
  own: boolean;
}

/** The keys a user trusts. */
export interface PackTrust {
  trusted(): Promise<TrustedKey[]>;
}

export interface PackSigner {
  publicKey: string;
  sign(data: Buffer): string;
}

/** Trusts no key: every signed pack is untrusted (the hub, which keeps no keys of its own). */
export const NO_TRUSTED_KEYS: PackTrust = { trusted: async () => [] };

export const isPublicKey = (text: string): boolean => KEY_SHAPE.test(text);

/** `ed25519:AbCdEfGh…`: enough to tell keys apart in a message. */
export const shortKey = (key: string): string => (key.length > 20 ? `${key.slice(0, 20)}…` : key);

export function generateSigningKey(): { privatePem: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privatePem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), publicKey: publicKeyText(publicKey) };
}

function publicKeyText(key: KeyObject): string {
  return KEY_PREFIX + (key.export({ format: 'jwk' }).x as string);
}

/** A signer over a PKCS#8 PEM private key. */
export function pemSigner(privatePem: string): PackSigner {
  const privateKey = createPrivateKey(privatePem);
  return {
    publicKey: publicKeyText(createPublicKey(privateKey)),
    sign: (data) => sign(null, data, privateKey).toString('base64url'),
  };
}

function importPublicKey(text: string): KeyObject | null {
  if (!isPublicKey(text)) return null;
  try {
    return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: text.slice(KEY_PREFIX.length) }, format: 'jwk' });
  } catch {
    return null;
  }
}

/** What the manifest signature covers: every field but the signature. */
export function manifestPayload(manifest: PackManifest): Buffer {
  const { signature: _signature, ...rest } = manifest;
  return Buffer.from(canonicalJson(rest));
}

/** What an engram signature covers: the parsed file without provenance.signature. */
export function engramPayload(raw: unknown): Buffer {
  const copy = structuredClone(raw) as { provenance?: Record<string, unknown> };
  if (copy && typeof copy === 'object' && copy.provenance && typeof copy.provenance === 'object') delete copy.provenance.signature;
  return Buffer.from(canonicalJson(copy));
}

export const engramSignature = (signer: PackSigner, raw: unknown): string => `${signer.publicKey}:${signer.sign(engramPayload(raw))}`;

const verifies = (key: KeyObject, data: Buffer, signature: string): boolean => {
  try {
    return verify(null, data, key, Buffer.from(signature, 'base64url'));
  } catch {
    return false;
  }
};

/** Verifies a pack folder's signatures (its integrity is checked apart) against the keys the user trusts. */
export async function checkSignature(folder: PackFolder, trust: PackTrust): Promise<PackSignatureCheck> {
  const { signer, signature } = folder.manifest;
  if (signer === undefined && signature === undefined) return { status: 'unsigned', signer: null, signer_label: null, problems: [] };
  const problems: string[] = [];
  const key = signer === undefined ? null : importPublicKey(signer);
  if (signer === undefined) problems.push(`${MANIFEST_FILE} has a signature but no signer`);
  else if (!key) problems.push(`${MANIFEST_FILE}: signer is not an Ed25519 public key (${KEY_PREFIX}<base64url>)`);
  else if (signature === undefined) problems.push(`${MANIFEST_FILE} names a signer but carries no signature`);
  else if (!verifies(key, manifestPayload(folder.manifest), signature)) {
    problems.push(`the signature in ${MANIFEST_FILE} does not match its content: the pack changed after it was signed`);
  }
  if (key) {
    for (const { file, raw } of folder.engrams) {
      const found = (raw as { provenance?: { signature?: unknown } }).provenance?.signature;
      const m = typeof found === 'string' ? ENGRAM_SIGNATURE.exec(found) : null;
      if (!m) problems.push(`${ENGRAMS_DIR}/${file} carries no ${KEY_PREFIX} signature in provenance.signature`);
      else if (`${KEY_PREFIX}${m[1]}` !== signer) problems.push(`${ENGRAMS_DIR}/${file} is signed by another key than the pack`);
      else if (!verifies(key, engramPayload(raw), m[2]!))
        problems.push(`${ENGRAMS_DIR}/${file} does not match its signature: it changed after it was signed`);
    }
  }
  if (problems.length) return { status: 'invalid', signer: signer ?? null, signer_label: null, problems };
  const known = (await trust.trusted()).find((k) => k.key === signer);
  return {
    status: known ? 'trusted' : 'untrusted',
    signer: signer!,
    signer_label: known ? (known.own ? 'you' : known.label) : null,
    problems: [],
  };
}
