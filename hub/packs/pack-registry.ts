import type { InstalledPack, PackRegistry } from '../../engine/ops/packs/registry.js';
import type { AccessPolicy, Database, Org } from '../contracts.js';
import { ident } from '../data/sql.js';
import { authChanged } from '../access/epoch.js';
import { emitEvents } from '../webhooks/webhook-outbox.js';

/**
 * The engine's record of installed packs, in the organization's `packs` table. Bound to the
 * caller's policy like the backend: installing and removing packs is an admin's (null: the hub's own).
 */
export class PgPackRegistry implements PackRegistry {
  private readonly s: string;

  constructor(
    private readonly db: Database,
    private readonly org: Org,
    private readonly policy: AccessPolicy | null,
  ) {
    this.s = ident(org.schema);
  }

  async list(): Promise<{ packs: InstalledPack[]; problems: string[] }> {
    const r = await this.db.query<{ record: InstalledPack }>(`SELECT record FROM ${this.s}.packs ORDER BY name`);
    return { packs: r.rows.map((x) => x.record), problems: [] };
  }

  async get(name: string): Promise<InstalledPack | null> {
    return (
      (await this.db.query<{ record: InstalledPack }>(`SELECT record FROM ${this.s}.packs WHERE name = $1`, [name])).rows[0]?.record ?? null
    );
  }

  // An installed pack is a scope everyone in the organization reads: its changes are changes
  // of who may read what. The install's second write, the complete record, is pack.installed.
  async put(record: InstalledPack): Promise<void> {
    this.policy?.forPack(record.name);
    await this.db.transaction(async (q) => {
      await q.query(
        `INSERT INTO ${this.s}.packs (name, record) VALUES ($1, $2::jsonb) ON CONFLICT (name) DO UPDATE SET record = excluded.record, installed_at = now()`,
        [record.name, JSON.stringify(record)],
      );
      await authChanged(q, this.org);
      if (record.state !== 'installing') await emitEvents(q, this.org, [{ type: 'pack.installed', data: record }]);
    });
  }

  async remove(name: string): Promise<boolean> {
    this.policy?.forPack(name);
    return this.db.transaction(async (q) => {
      const removed = (await q.query(`DELETE FROM ${this.s}.packs WHERE name = $1 RETURNING name`, [name])).rows.length > 0;
      if (removed) await authChanged(q, this.org);
      return removed;
    });
  }
}
