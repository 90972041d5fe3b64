// The store's JSON-lines logs under sync: episodes/ (one file per day) and events/ (one per
// month). A log only ever grows on disk (the index reads it incrementally), so two machines can
// hold the same lines in different orders; what is committed is the sorted set of lines, the
// same on every machine, and a merge is the union of both sides' lines.

export const LOG_PATH = /^(episodes|events)\/[^/]+\.jsonl$/;
export const EVENTS_PATH = /^events\/[^/]+\.jsonl$/;

export function lines(text: string): string[] {
  return text.split('\n').filter((l) => l !== '');
}

/** The local lines, then the remote lines the local side lacks: the file on disk only grows. */
export function unionLines(local: string, remote: string): string {
  const mine = lines(local);
  const seen = new Set(mine);
  const extra = lines(remote).filter((l) => !seen.has(l) && (seen.add(l), true));
  const all = [...mine, ...extra];
  return all.length ? all.join('\n') + '\n' : '';
}

/** Drops the events lines that name a local engram (they would leak its id and history). */
function filterEvents(text: string, localIds: ReadonlySet<string>): string {
  if (localIds.size === 0) return text;
  return text
    .split('\n')
    .filter((line) => {
      if (line.trim() === '') return true;
      try {
        const ev = JSON.parse(line) as { engram_id?: string; engram_ids?: string[] };
        if (ev.engram_id && localIds.has(ev.engram_id)) return false;
        if (ev.engram_ids?.some((id) => localIds.has(id))) return false;
        return true;
      } catch {
        return true;
      }
    })
    .join('\n');
}

/** The blob committed for a log: its lines sorted by time (then text), events without local engrams. */
export function committedLog(path: string, text: string, localIds: ReadonlySet<string>): string {
  const kept = EVENTS_PATH.test(path) ? filterEvents(text, localIds) : text;
  const keyed = lines(kept).map((line) => {
    let at = '';
    try {
      const v = (JSON.parse(line) as { at?: unknown }).at;
      if (typeof v === 'string') at = v;
    } catch {
      /* an unreadable line sorts first, kept as it is */
    }
    return { at, line };
  });
  keyed.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.line < b.line ? -1 : a.line > b.line ? 1 : 0));
  return keyed.length ? keyed.map((k) => k.line).join('\n') + '\n' : '';
}
