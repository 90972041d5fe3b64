import { invalid } from '../../engine/errors.js';
import type { Output } from '../../engine/cli/cli-kit.js';
import type { Database } from '../contracts.js';

// `svc hub secrets rotate`: re-seals every secret the hub keeps in its database (webhook secrets,
// identity providers' client secrets, the keys generated into the control schema) under the key
// in SVC_HUB_SECRET_KEY, opening each with that key or one in SVC_HUB_SECRET_KEY_OLD; secrets
// stored in clear before a key was set are sealed. The control schema is done in one
// transaction, each organization in one of its own; run again, it changes nothing.

type Flags = { data?: string; path?: string };

export async function rotate(flags: Flags, out: Output, open: (flags: Flags) => Promise<Database>): Promise<number> {
  const { resealAll, secretBoxFromEnv, SECRET_KEY_ENV } = await import('../data/secret-box.js');
  // The keys are checked before the database is opened: a bad one is refused in one line.
  const box = secretBoxFromEnv(process.env);
  if (!box.keyId)
    throw invalid(`${SECRET_KEY_ENV} is not set: give the key to seal the secrets under (and any earlier ones in SVC_HUB_SECRET_KEY_OLD)`);
  const db = await open(flags);
  try {
    const report = await resealAll(db, box);
    out.result(report, () => {
      const line = (where: string, c: { sealed: number; resealed: number; unchanged: number }) =>
        `  ${where}: ${c.sealed} sealed (were in clear), ${c.resealed} re-sealed (were under an earlier key), ${c.unchanged} already under this key`;
      return [
        `Every secret in the database is sealed under key ${report.keyId}`,
        line('control schema', report.control),
        ...report.orgs.map((o) => line(o.slug, o)),
      ].join('\n');
    });
    return 0;
  } finally {
    await db.close();
  }
}
