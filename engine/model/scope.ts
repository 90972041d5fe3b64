// Scopes are `<kind>:<path>` or a bare kind. `user:` and `local` are private to one person;
// everything else (global, org, group, project, pack, unknown kinds) may be shared with others.

export const DEFAULT_SCOPE = 'global';
export const PRIVATE_FALLBACK_SCOPE = 'local';

export function scopeKind(scope: string): string {
  const i = scope.indexOf(':');
  return i === -1 ? scope : scope.slice(0, i);
}

export function isSharedScope(scope: string): boolean {
  const kind = scopeKind(scope);
  return kind !== 'user' && kind !== 'local';
}

/** A scope as typed by a user: no whitespace, no empty kind or path. Returns an error or null. */
export function checkScope(scope: string): string | null {
  if (scope.length === 0) return 'scope: must not be empty';
  if (/\s/.test(scope)) return `scope: must not contain whitespace (got "${scope}")`;
  const i = scope.indexOf(':');
  if (i === 0) return `scope: kind before ":" is missing (got "${scope}")`;
  if (i === scope.length - 1) return `scope: path after ":" is missing (got "${scope}")`;
  return null;
}
