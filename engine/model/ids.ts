// Engram ids: `ENG-YYYY-MMDD-NNN`, or store-namespaced `ENG-{PREFIX}-YYYY-MMDD-NNN`.
// Every store instance (each clone, each added store) owns its own prefix, so two stores
// of one user can never hand out the same id. NNN grows past three digits when a day
// holds more than 999 engrams.

export type IdKind = 'ENG' | 'ABS' | 'META';

const ID_SHAPE = /^(ENG|ABS|META)-[A-Za-z0-9-]+$/;
const DATED = /^(ENG|ABS|META)-(?:([A-Z][A-Z0-9]{1,15})-)?(\d{4})-(\d{4})-(\d{3,})$/;

export interface ParsedId {
  kind: IdKind;
  prefix: string | null;
  day: string; // YYYY-MMDD
  seq: number;
}

export function isEngramId(value: string): boolean {
  return ID_SHAPE.test(value);
}

/** Ids that name an engram directly on the command line (forget, feedback). */
export function looksLikeId(value: string): boolean {
  return /^(ENG|ABS|META)-/.test(value);
}

export function parseId(id: string): ParsedId | null {
  const m = DATED.exec(id);
  if (!m) return null;
  return { kind: m[1] as IdKind, prefix: m[2] ?? null, day: `${m[3]}-${m[4]}`, seq: Number(m[5]) };
}

/** `2026-1122` for a date, in UTC so every process of a store agrees. */
export function idDay(date: Date): string {
  const mm = String(date.getUTCMonth() + 1).padStart(2, '0');
  const dd = String(date.getUTCDate()).padStart(2, '0');
  return `${date.getUTCFullYear()}-${mm}${dd}`;
}

/** The id stem shared by every id of one kind, prefix and day, e.g. `ENG-KQ7M-2026-1122-`. */
export function idStem(kind: IdKind, prefix: string | null, day: string): string {
  return prefix ? `${kind}-${prefix}-${day}-` : `${kind}-${day}-`;
}

export function formatId(kind: IdKind, prefix: string | null, day: string, seq: number): string {
  return idStem(kind, prefix, day) + String(seq).padStart(3, '0');
}

// No I/O/0/1: a prefix is read aloud and typed by people.
const PREFIX_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

/** A fresh store prefix: a letter then three more characters (about a million choices). */
export function newStorePrefix(random: (n: number) => Buffer): string {
  const bytes = random(4);
  let out = '';
  for (let i = 0; i < 4; i++) {
    const alphabet = i === 0 ? PREFIX_ALPHABET.slice(0, 24) : PREFIX_ALPHABET;
    out += alphabet[bytes[i]! % alphabet.length];
  }
  return out;
}

export function isStorePrefix(value: string): boolean {
  return /^[A-Z][A-Z0-9]{1,15}$/.test(value);
}
