import { describe, expect, it } from 'vitest';
import { engramListLines } from '../browse/engram-list-lines.js';
import { initialState } from '../browse/state.js';
import type { EngramRow } from '../browse/data.js';
import { okIn as ok, runIn as run, tempStore } from '../../engine/test/support/run-svc.js';

// Columns sized to the terminal (issue 27: the scope was "project:my-…" even at 200 columns),
// and long statements cut in text output, whole in JSON.

const row = (i: number, scope: string, domain?: string): EngramRow => ({
  id: `ENG-AB12-2026-0101-00${i}`,
  statement: `Statement number ${i} about the service`,
  type: 'behavioral',
  scope,
  ...(domain ? { domain } : {}),
  status: 'active',
  pinned: false,
});

function rowsAt(width: number, rows: EngramRow[]): string[] {
  const state = initialState({ rows, complete: true, total: rows.length, limit: 50 });
  return engramListLines(state.engrams, false, width, 10)
    .filter((l) => l.text.includes('Statement number'))
    .map((l) => l.text);
}

describe('the engram list in svc browse', () => {
  const rows = [row(1, 'project:my-service-api', 'infra.deploy.k8s'), row(2, 'global')];

  it('shows the whole scope and domain on a wide terminal, in aligned columns', () => {
    const lines = rowsAt(200, rows);
    expect(lines[0]).toContain('project:my-service-api ');
    expect(lines[0]).toContain('infra.deploy.k8s ');
    expect(lines[0]!.indexOf('Statement')).toBe(lines[1]!.indexOf('Statement'));
  });

  it('cuts them only where the terminal is narrow', () => {
    expect(rowsAt(80, rows)[0]).toContain('project:my-serv…');
    expect(rowsAt(60, rows)[0]).not.toContain('project:my-service-api');
  });
});

describe('svc list text output', () => {
  it.concurrent('cuts a 4,000-character statement with an ellipsis; JSON keeps it whole', async () => {
    const store = tempStore();
    const long = `Release notes ${'word '.repeat(795)}end`;
    expect(long.length).toBeGreaterThan(3900);
    await ok(store, ['learn', long]);
    const text = await run(store, ['list', '--no-json']);
    expect(text.code).toBe(0);
    const statementLine = text.stdout.split('\n')[1]!;
    expect(statementLine.length).toBeLessThanOrEqual(210);
    expect(statementLine).toMatch(/^ {4}Release notes word( word)*…$/);
    expect((await ok(store, ['list'])).engrams[0].statement).toBe(long);
  });
});
