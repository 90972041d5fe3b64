import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { invalid } from './errors.js';

// Where the store is: --path, else $SVC_PATH, else ~/.svc. Its own module because hooks need
// the answer on every prompt without loading SQLite.
export function resolveStoreRoot(flagPath?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (flagPath) return resolve(flagPath);
  if (env.SVC_PATH) return resolve(env.SVC_PATH);
  return join(homedir(), '.svc');
}

/**
 * The store root for a command that only reads: a folder the user named (--path or SVC_PATH)
 * must exist, so a typo is an error naming it rather than a new empty store that answers
 * "nothing found". The default ~/.svc is left alone: a first `svc status` may create it.
 */
export function existingStoreRoot(flagPath?: string, env: NodeJS.ProcessEnv = process.env): string {
  const root = resolveStoreRoot(flagPath, env);
  if ((flagPath || env.SVC_PATH) && !existsSync(root)) {
    throw invalid(
      `no store at ${root} (${flagPath ? '--path' : 'SVC_PATH'}): check the path; a command that writes, such as svc learn, creates it`,
    );
  }
  return root;
}
