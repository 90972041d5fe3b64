import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runConversation } from '../../scripts/bench/locomo.js';
import { CLI } from '../../engine/test/support/run-svc.js';

// Outside testers measure recall quality through `svc mcp` (svc_session_start, svc_learn in that
// session, svc_session_end, svc_recall); the LoCoMo bench does the same with --mcp. A tool that
// dropped the session, a default or a ranking step would rank differently from the engine: the
// two must give every question the same rank.

const turn = (dia_id: string, speaker: string, text: string) => ({ dia_id, speaker, text });

const CONVERSATION = {
  speaker_a: 'Ana',
  speaker_b: 'Ben',
  session_1_date_time: '1:56 pm on 8 May, 2023',
  session_1: [
    turn('D1:1', 'Ana', 'Hi Ben, long week at the bakery.'),
    turn('D1:2', 'Ben', 'Did you finally adopt that dog you wanted?'),
    turn('D1:3', 'Ana', 'Yes! We brought home a puppy named Biscuit on Sunday.'),
    turn('D1:4', 'Ben', 'Great. I started learning the cello last month.'),
    turn('D1:5', 'Ana', 'How are the lessons going?'),
    turn('D1:6', 'Ben', 'Slowly, my teacher says my bowing is stiff.'),
  ],
  session_2_date_time: '10:37 am on 27 June, 2023',
  session_2: [
    turn('D2:1', 'Ana', 'I entered a sourdough contest in Lisbon.'),
    turn('D2:2', 'Ben', 'Which bread did you bake for it?'),
    turn('D2:3', 'Ana', 'A rye loaf with caraway seeds, and it won second place.'),
    turn('D2:4', 'Ben', 'I am training for a half marathon in October.'),
    turn('D2:5', 'Ana', 'Which shoes do you run in?'),
    turn('D2:6', 'Ben', 'Trail shoes from a small brand in Porto.'),
  ],
  qa: [
    { question: 'What did Ana adopt?', evidence: ['D1:3'], category: 4 },
    { question: 'What instrument is Ben learning?', evidence: ['D1:4'], category: 4 },
    { question: 'Where was the sourdough contest?', evidence: ['D2:1'], category: 4 },
    { question: 'Which bread did Ana bake for the contest?', evidence: ['D2:2; D2:3'], category: 1 },
    { question: 'When is the half marathon Ben trains for?', evidence: ['D2:4'], category: 2 },
    { question: 'What shoes does Ben run in?', evidence: ['D2:6'], category: 4 },
    { question: 'What did Ben adopt?', adversarial_answer: 'a puppy', category: 5 },
    { question: 'Where does Ana live?', evidence: [], category: 3 },
  ],
};

describe('the LoCoMo bench through svc mcp', () => {
  let dir: string;
  let file: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-locomo-mcp-'));
    file = join(dir, 'conversation.json');
    writeFileSync(file, JSON.stringify(CONVERSATION));
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('ranks every question as the engine in this process does', async () => {
    const engine = await runConversation(file, { fast: true, through: 'engine' }, new Set());
    const mcp = await runConversation(file, { fast: true, through: 'mcp', cli: CLI }, new Set());
    expect(engine.outcomes.map((o) => o.firstRank)).toEqual(mcp.outcomes.map((o) => o.firstRank));
    expect(engine.outcomes.map((o) => o.evidenceFound)).toEqual(mcp.outcomes.map((o) => o.evidenceFound));
    // Six questions: the adversarial one is not asked, the one without evidence is skipped.
    expect(mcp).toMatchObject({ turns: 12, engrams: 12, skipped: 1 });
    expect(mcp.outcomes).toHaveLength(6);
    expect(mcp.outcomes.every((o) => o.firstRank !== null)).toBe(true);
    expect(mcp.outcomes.filter((o) => o.firstRank === 1).length).toBeGreaterThanOrEqual(4);
  }, 60_000);
});
