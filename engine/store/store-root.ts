import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

// Where the store is: --path, else $SVC_PATH, else ~/.svc. Its own module because hooks need
// the answer on every prompt without loading SQLite.
export function resolveStoreRoot(flagPath?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (flagPath) return resolve(flagPath);
  if (env.SVC_PATH) return resolve(env.SVC_PATH);
  return join(homedir(), '.svc');
}
