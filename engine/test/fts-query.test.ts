import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import Database from 'better-sqlite3';
import { ftsQuery, queryTerms, MAX_QUERY_PHRASES } from '../search/fts-query.js';
import { ASCII_PATTERNS, ftsIndexText, foldText, splitUnsegmented, unicodePatterns } from '../search/fts-text.js';
import { seededRandom } from '../seeded-random.js';
import { STOP_WORDS } from '../search/stop-words.js';

// Query construction, and the agreement between the indexed text and the queries, checked
// against a real FTS5 table with the store's tokenizer.

let db: Database.Database;
let insert: Database.Statement;

beforeAll(() => {
  db = new Database(':memory:');
  db.exec(`CREATE VIRTUAL TABLE t USING fts5(statement, tags, domain, rationale,
    tokenize = 'porter unicode61 remove_diacritics 2')`);
  insert = db.prepare("INSERT INTO t (rowid, statement, tags, domain, rationale) VALUES (?, ?, '', '', '')");
});

afterAll(() => db.close());

/** Rows of the table matching the query built from `text` (the table is reset first). */
function search(docs: string[], text: string, mode: 'any' | 'all' = 'any'): number[] {
  db.exec('DELETE FROM t');
  docs.forEach((d, i) => insert.run(i + 1, ftsIndexText(d)));
  const match = ftsQuery(text, mode);
  if (match === null) return [];
  const rows = db.prepare('SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t, 4, 2, 2, 1)').all(match) as { rowid: number }[];
  return rows.map((r) => r.rowid);
}

/** The words of the query, however they are quoted and joined. */
const phrases = (q: string | null): string[] => [...(q ?? '').matchAll(/"((?:[^"]|"")*)"/g)].map((m) => m[1]!);

describe('stop words and question words', () => {
  it('drops question words and function words from a question', () => {
    expect(phrases(ftsQuery('What did Caroline research?', 'any')).filter((p) => p !== 'caroline')).toEqual(['research']);
    for (const q of ['When did Melanie paint a sunrise?', 'How does the team deploy to production?', 'Why is the build so slow?']) {
      const words = phrases(ftsQuery(q, 'any'));
      expect(words.length).toBeGreaterThan(0);
      for (const w of words) expect(STOP_WORDS.has(w), `${w} in ${q}`).toBe(false);
    }
  });

  it('keeps the stop words when nothing else is left', () => {
    expect(phrases(ftsQuery('What is it?', 'any'))).toEqual(['what', 'is', 'it']);
    expect(ftsQuery('to be or not to be', 'all')).toBe('"to" AND "be" AND "or" AND "not"');
  });

  it('reads a capitalized stop word inside a sentence as a name or an acronym', () => {
    const words = phrases(ftsQuery('What did Will tell the US team about IT budgets?', 'any'));
    expect(words).toEqual(expect.arrayContaining(['will', 'us', 'it', 'tell', 'team', 'budgets']));
    expect(words).not.toContain('what');
    expect(words).not.toContain('the');
    // A shouted question has no names: its stop words go.
    expect(phrases(ftsQuery('WHAT IS THE PLAN', 'any'))).toEqual(['plan']);
  });

  it('does not drop months or "won"', () => {
    expect(phrases(ftsQuery('Who won the race in May?', 'any'))).toEqual(expect.arrayContaining(['won', 'race', 'may']));
  });
});

describe('terms', () => {
  it('lowercases and deduplicates', () => {
    expect(ftsQuery('cache Cache CACHE caching', 'all')).toBe('"cache" AND "caching"');
    expect(queryTerms('Cache the cache')).toEqual(['cache']);
  });

  it('counts a name twice in recall, once in forget', () => {
    expect(ftsQuery('What does Zoltan think about tabs?', 'any')).toBe('"zoltan" OR "zoltan" OR "think" OR "tabs"');
    expect(ftsQuery('What does Zoltan think about tabs?', 'all')).toBe('"zoltan" AND "think" AND "tabs"');
    // The first word of a sentence is capitalized anyway: not a name.
    expect(ftsQuery('Deployments run on Fridays. Rollbacks too', 'any')).toBe(
      '"deployments" OR "run" OR "fridays" OR "fridays" OR "rollbacks"',
    );
  });

  it('asks for hyphenated compounds split and joined', () => {
    expect(ftsQuery('self-care tips', 'any')).toBe('"self" OR "care" OR "selfcare" OR "tips"');
    expect(ftsQuery('self-care tips', 'all')).toBe('("self care" OR "selfcare") AND "tips"');
  });

  it('turns a run of Han, kana, Hangul or Thai into character phrases', () => {
    expect(ftsQuery('数据库', 'all')).toBe('"数 据 库"');
    expect(ftsQuery('数据库', 'any')).toBe('"数 据 库" OR "数 据" OR "据 库"');
    expect(ftsQuery('书', 'any')).toBe('"书"');
    expect(ftsQuery('SQLite数据库', 'all')).toBe('"sqlite" AND "数 据 库"');
    expect(ftsQuery('ข้อมูล', 'all')).toBe('"ข อ ม ล"'); // the tokenizer drops Thai marks; so does the query
  });

  it('returns null when the text has no word', () => {
    for (const t of ['', '   ', '?!', '"" ** ()', '\u0301\u0301', '\u0000']) {
      expect(ftsQuery(t, 'any')).toBeNull();
      expect(ftsQuery(t, 'all')).toBeNull();
    }
  });

  it('bounds the size of a query built from a long text', () => {
    const text = Array.from({ length: 500 }, (_, i) => `word${i}`).join(' ');
    expect(phrases(ftsQuery(text, 'any'))).toHaveLength(MAX_QUERY_PHRASES);
    expect(phrases(ftsQuery(text, 'all'))).toHaveLength(MAX_QUERY_PHRASES);
  });
});

describe('FTS5 syntax in user text', () => {
  const hostile = [
    'say "hello',
    'a"b"c',
    'deploy*',
    '*',
    'statement: secrets',
    'tags:foo',
    '{statement tags}: x',
    '^start',
    'NEAR(deploy friday, 2)',
    'NEAR',
    'cache AND',
    'OR OR OR',
    'NOT cache',
    'AND',
    '(unbalanced',
    'balanced) )(',
    '-minus +plus',
    "it's O'Brien's",
    'x"; DROP TABLE t; --',
    'col:"phrase" NEAR/3 *',
  ];

  it('quotes every term: the query has only quoted words, OR, AND and parentheses', () => {
    const SAFE = /^(?:\(?"(?:[^"]|"")*"(?: OR "(?:[^"]|"")*")*\)?)(?: (?:OR|AND) \(?"(?:[^"]|"")*"(?: OR "(?:[^"]|"")*")*\)?)*$/u;
    for (const text of hostile) {
      for (const mode of ['any', 'all'] as const) {
        const q = ftsQuery(text, mode);
        if (q === null) continue;
        expect(q, text).toMatch(SAFE);
        for (const p of phrases(q)) expect(p).toMatch(/^[\p{L}\p{N}\p{M}\p{Co} ]+$/u);
      }
    }
  });

  it('runs every hostile text through MATCH without an error, finding the words it holds', () => {
    const docs = ['near the deploy on friday', 'cache and secrets', "O'Brien said hello", 'statement about tags'];
    for (const text of hostile) {
      for (const mode of ['any', 'all'] as const) expect(() => search(docs, text, mode), text).not.toThrow();
    }
    expect(search(docs, 'NEAR(deploy friday, 2)')).toEqual([1]);
    expect(search(docs, 'cache AND')).toContain(2);
    expect(search(docs, "it's O'Brien's")).toEqual([3]);
  });

  it('never yields a query FTS5 rejects (fuzz over random strings)', () => {
    const pieces = [
      ...'"\'*:^()[]{}-+.,;!?/\\|&%$#@~`<>=_ \t\n\u0000',
      'AND',
      'OR',
      'NOT',
      'NEAR',
      'NEAR(',
      'and',
      'or',
      'near/3',
      'col:',
      '"x"',
      '**',
      'the',
      'what',
      'did',
      'Will',
      'US',
      'cache',
      'Deploy',
      'friday',
      'self-care',
      'e-mail',
      'a-',
      '数',
      '据库',
      'データ',
      'ベース',
      'を',
      '한국어',
      '데이터',
      'ฐาน',
      'ข้อ',
      'ມູນ',
      'ខ្មែរ',
      'မြန်',
      'ー',
      '々',
      '。',
      'Crème',
      'brûlée',
      'ß',
      'Ёлка',
      'λόγος',
      'ΑΘΗΝΑ',
      'नमस्ते',
      'مرحبا',
      'שלום',
      'ＡＢＣ',
      'ﬁ',
      '①',
      '𝐀',
      '\u0301',
      '\u0e49',
      '\u200b',
      '\u200d',
      '\ufeff',
      '\ud83d\ude00',
      '\ud800',
      '\udfff',
      '\ue000',
      '\u00ad',
    ];
    let seed = 12345;
    const rand = (): number => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    db.exec('DELETE FROM t');
    ['the cache and the deploy', '我们使用数据库', 'データベースを使う', 'Crème brûlée', 'λόγος', 'self-care'].forEach((d, i) =>
      insert.run(i + 1, ftsIndexText(d)),
    );
    const match = db.prepare('SELECT count(*) AS n FROM t WHERE t MATCH ?');
    for (let i = 0; i < 3000; i++) {
      const n = 1 + Math.floor(rand() * 12);
      let text = '';
      for (let j = 0; j < n; j++) text += pieces[Math.floor(rand() * pieces.length)]! + (rand() < 0.3 ? ' ' : '');
      for (const mode of ['any', 'all'] as const) {
        const q = ftsQuery(text, mode);
        if (q === null) continue;
        try {
          match.get(q);
        } catch (err) {
          throw new Error(`${JSON.stringify(text)} (${mode}) -> ${q}: ${(err as Error).message}`);
        }
      }
      // Indexing any text must work too.
      expect(() => insert.run(100 + i, ftsIndexText(text))).not.toThrow();
    }
  });
});

describe('the indexed text and the query agree', () => {
  it('finds a CJK word inside a sentence written without spaces', () => {
    const docs = ['我们使用数据库', 'データベースを使う', '데이터베이스를 사용합니다', 'เราใช้ฐานข้อมูล', 'we use a database'];
    expect(search(docs, '数据库')).toEqual([1]);
    expect(search(docs, '数据库', 'all')).toEqual([1]);
    expect(search(docs, 'データベース')).toEqual([2]);
    expect(search(docs, '데이터베이스')).toEqual([3]);
    expect(search(docs, 'ฐานข้อมูล')).toEqual([4]);
    expect(search(docs, 'database')).toEqual([5]);
    // A longer question ranks the documents sharing most of its characters first.
    expect(search(docs, '我们用什么数据库？')[0]).toBe(1);
    // A phrase of characters, not any of them: 据 alone is not 数据库.
    expect(search(['数据库', '证据'], '数据库', 'all')).toEqual([1]);
  });

  it('splits only unsegmented scripts', () => {
    expect(splitUnsegmented('SQLite数据库 v2')).toBe('SQLite 数  据  库  v2');
    expect(ftsIndexText('plain ascii text')).toBe('plain ascii text');
  });

  it('folds accents, width and case the way people type', () => {
    expect(foldText('Καλημέρα')).toBe('Καλημερα');
    expect(foldText('Ёлка')).toBe('Елка');
    expect(foldText('Straße ＡＢＣ ﬁle')).toBe('Strasse ABC file');
    const docs = ['Crème brûlée au café', 'Мы используем базу данных', 'Καλημέρα κόσμε', 'Ёлка в лесу', 'Straße', 'ＡＢＣ report'];
    expect(search(docs, 'creme brulee')[0]).toBe(1);
    expect(search(docs, 'CAFÉ')).toEqual([1]);
    expect(search(docs, 'базу данных', 'all')).toEqual([2]);
    expect(search(docs, 'καλημερα')).toEqual([3]);
    expect(search(docs, 'ΚΑΛΗΜΈΡΑ')).toEqual([3]);
    expect(search(docs, 'елка')).toEqual([4]);
    expect(search(docs, 'ёлка')).toEqual([4]);
    expect(search(docs, 'strasse')).toEqual([5]);
    expect(search(docs, 'abc')).toEqual([6]);
  });

  it('matches a hyphenated compound written joined, spaced or hyphenated', () => {
    const docs = ['Running helps me de-stress', 'I read my e-mail at nine', 'self care matters'];
    expect(search(docs, 'destress')).toEqual([1]);
    expect(search(docs, 'de-stress', 'all')).toEqual([1]);
    expect(search(docs, 'email', 'all')).toEqual([2]);
    expect(search(docs, 'self-care', 'all')).toEqual([3]);
  });

  it('keeps scripts with combining marks findable (Devanagari)', () => {
    expect(search(['नमस्ते दुनिया', 'hello world'], 'नमस्ते')).toEqual([1]);
  });
});

describe('the ASCII patterns', () => {
  // ASCII text is split with ASCII patterns (cheap to compile); they must match exactly what the
  // Unicode ones match on it, or a query would differ by whether it holds one accent.
  const unicode = unicodePatterns();
  const keys = Object.keys(ASCII_PATTERNS) as (keyof typeof ASCII_PATTERNS)[];

  it('classify every ASCII character as the Unicode patterns do', () => {
    for (let c = 0; c < 128; c++) {
      const ch = String.fromCharCode(c);
      for (const k of keys) {
        const [a, u] = [ASCII_PATTERNS[k], unicode[k]];
        expect([k, ch, new RegExp(a.source, a.flags.replace('g', '')).test(ch)]).toEqual([
          k,
          ch,
          new RegExp(u.source, u.flags.replace('g', '')).test(ch),
        ]);
      }
    }
  });

  it('split random ASCII text into the same words, compounds and chunks', () => {
    const random = seededRandom(7);
    const alphabet = 'abcXYZ09--  .,:;!?"\'`*_()[]{}<>/\\@#$%^&+=~|\t\n';
    for (let n = 0; n < 2000; n++) {
      let text = '';
      for (let i = Math.floor(random() * 40); i > 0; i--) text += alphabet[Math.floor(random() * alphabet.length)];
      for (const k of ['word', 'compound', 'chunk'] as const) {
        expect([...text.matchAll(ASCII_PATTERNS[k])].map((m) => [m.index, m[0]])).toEqual(
          [...text.matchAll(unicode[k])].map((m) => [m.index, m[0]]),
        );
      }
    }
  });
});
