import Database from 'better-sqlite3';
import { createRequire } from 'node:module';

// Every SQLite connection svc opens (the index, the tokenizer, a migration's lock, an imported
// history file) goes through here, so that each names better-sqlite3's compiled addon. Left to
// find it, better-sqlite3 asks the `bindings` package, which reads a stack trace and probes a
// dozen paths (3 ms of every command), and fails inside the CLI's bundle, where better-sqlite3's
// JavaScript is compiled in (scripts/bundle-cli.ts).

/** The addon's path; undefined (better-sqlite3's own search) when it is elsewhere. */
const ADDON = ((): string | undefined => {
  try {
    return createRequire(import.meta.url).resolve('better-sqlite3/build/Release/better_sqlite3.node');
  } catch {
    return undefined;
  }
})();

/** A better-sqlite3 connection to `path` (`:memory:` for one in memory). */
export function openSqlite(path: string, options: Database.Options = {}): Database.Database {
  return new Database(path, { ...options, ...(ADDON && { nativeBinding: ADDON }) });
}
