import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { importIntoStore } from '../../engine/ops/import/import.js';
import { round } from '../../engine/text.js';

/**
 * Generates 10,000 JSONL rows in `dir` and imports them into a fresh store there; returns the
 * rate (rows per second, reading and mapping included).
 */
export async function benchImport(dir: string): Promise<{ rows: number; rows_per_s: number }> {
  const rows = 10_000;
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'bench-import.jsonl');
  const topics = ['build', 'tests', 'deploy', 'review', 'docs', 'release', 'style', 'security'];
  const lines: string[] = [];
  for (let i = 0; i < rows; i++) {
    const topic = topics[i % topics.length]!;
    lines.push(
      JSON.stringify({
        statement: `Rule ${i} for ${topic}: run the ${topic} check number ${i} before merging`,
        type: i % 10 === 0 ? 'procedural' : 'behavioral',
        domain: `bench.${topic}`,
        tags: ['bench', topic],
        created_at: new Date(Date.UTC(2024, 0, 1) + i * 60_000).toISOString(),
      }),
    );
  }
  writeFileSync(file, lines.join('\n') + '\n');
  const root = join(dir, `bench-store-${process.pid}-${Date.now()}`);
  const started = performance.now();
  const { report } = await importIntoStore(root, { from: 'generic', path: file, scope: 'project:bench' }, { now: () => new Date() });
  const seconds = (performance.now() - started) / 1000;
  if (report.imported !== rows) throw new Error(`benchImport: imported ${report.imported} of ${rows} rows (${report.error} errors)`);
  return { rows, rows_per_s: round(rows / seconds, 1) };
}
