import type { EngramBackend } from '../../engine/backend.js';
import { systemContext } from '../../engine/ops/context.js';

// The tensions view talks to this small port only: list the records, resolve one with a
// winner. `loadTensions` binds it to the engine's tensions module (engine/ops/tensions.ts, with
// its record store engine/store/tension-records.ts: records in `<store>/tensions/*.yaml`), loaded
// when the view is first opened; if that module cannot be loaded the view says so and
// everything else keeps working.

export interface TensionView {
  id: string;
  /** open, confirmed, dismissed or resolved. */
  status: string;
  /** The engrams in tension (two). */
  engrams: string[];
  /** One line on why they conflict (the judge's explanation). */
  summary: string;
  /** The whole record, every field, for the detail view. */
  record: Record<string, unknown>;
}

export interface TensionList {
  tensions: TensionView[];
  /** Unreadable record files, named rather than dropped. */
  warnings: string[];
}

export interface TensionsPort {
  /** Unresolved records (open and confirmed) by default; `all` adds dismissed and resolved ones. */
  list(opts: { all: boolean }): Promise<TensionList>;
  /** Keeps the winner, retires the other engram (history kept); returns a line for the user. */
  resolve(id: string, winner: string): Promise<string>;
}

export type TensionsState = { available: true; port: TensionsPort } | { available: false; reason: string };

export const NO_TENSIONS_MODULE = 'no tensions module';

/** Binds the port to engine/ops/tensions (records through engine/store/tension-records) for the store at `root`. */
export async function loadTensions(backend: EngramBackend, root: string): Promise<TensionsState> {
  let mod: typeof import('../../engine/ops/tensions/tensions.js');
  let records: typeof import('../../engine/store/tension-records.js');
  try {
    [mod, records] = await Promise.all([import('../../engine/ops/tensions/tensions.js'), import('../../engine/store/tension-records.js')]);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND') return { available: false, reason: NO_TENSIONS_MODULE };
    return { available: false, reason: `the tensions module failed to load: ${(err as Error).message.split('\n')[0]}` };
  }
  const store = new records.LocalTensionStore(backend, root);
  return {
    available: true,
    port: {
      async list({ all }) {
        const { records, warnings } = await mod.listTensions(store, all ? 'all' : 'unresolved');
        return {
          tensions: records.map((r) => ({
            id: r.id,
            status: r.status,
            engrams: r.engrams.map((s) => s.id),
            summary: r.explanation ?? '',
            record: r as unknown as Record<string, unknown>,
          })),
          warnings,
        };
      },
      async resolve(id, winner) {
        const r = await mod.resolveTension(store, id, winner, systemContext, `resolved in svc browse: kept ${winner}`);
        // Short enough for an 80-column line; the tension's id is on screen already.
        return r.changed ? `Resolved: kept ${r.winner}, retired ${r.loser}` : `${id} was already resolved for ${r.winner}`;
      },
    },
  };
}
