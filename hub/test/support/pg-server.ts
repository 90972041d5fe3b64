import pg from 'pg';

// The PostgreSQL server the hub suites use besides PGlite (trust auth, database `test`).

export const SERVER = process.env.SVC_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export async function serverReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: SERVER, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

export async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: SERVER });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** The server's URL with another database name. */
export function databaseUrl(name: string): string {
  const u = new URL(SERVER);
  u.pathname = `/${name}`;
  return u.toString();
}
