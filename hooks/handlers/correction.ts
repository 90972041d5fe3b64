// Detects when a user's prompt corrects the agent ("no, use X instead", "that's wrong", "I told
// you ...", "stop adding ...", "not X, Y") or states a standing convention ("from now on ...",
// "in this repo we always ..."). Pure and synchronous: it runs on every prompt.
//
// Precision matters more than recall: a false alarm asks the agent to record noise as memory,
// a miss only loses one reminder (the learning protocol still applies). So the rules look for
// phrasing aimed at what the agent did, not for words: "wrong", "don't", "instead", "revert" and
// "stop" all occur in ordinary requests ("fix the wrong import", "add a comment explaining why we
// don't retry", "use a Map instead of an object", "stop the dev server"). Deliberate choices:
// - "don't forget to ...", "don't worry about ..." are reminders for the task at hand, not
//   corrections: nothing the agent did was wrong and there is no standing rule to keep.
// - "use X instead of Y ..." names both sides: a plain request. A bare trailing "... instead."
//   points back at what the agent did: a correction.
// - A question about correctness ("Is this wrong?", "what's wrong with it?") is not a correction;
//   "why did you ...?" and "didn't I say ...?" are.
// - A failure report ("that didn't work", "still failing") is iteration, not a lesson to keep.
// Code (fenced blocks, inline code) and quoted text are masked first, so pasted logs and error
// messages cannot trigger it.

export type CorrectionKind = 'correction' | 'convention';

export interface CorrectionMatch {
  kind: CorrectionKind;
  /** Which rule fired (for tests and debugging). */
  rule: string;
  /** The sentence that fired, trimmed to at most 200 characters. */
  excerpt: string;
}

/** Leading words after which "no" is an answer or a pleasantry, not a correction. */
const BENIGN_AFTER_NO =
  /^(worries|worry|problem|problems|need|rush|hurry|pressure|thanks|thank you|way|idea|clue|doubt|matter|offense|biggie|prob|sweat|more|further|changes? (are )?needed|other)\b/;
/** After "no, ...": acknowledgements ("no, that's fine"). */
const BENIGN_ACK =
  /^(that'?s|it'?s|this is|that is|it is|all)\s+(fine|ok|okay|good|great|perfect|all good|correct|right|it)\b|^(fine|ok|okay|good|great|thanks|go ahead|leave it|keep it|that'?s all|all good|just|only)\b/;
/** Verbs after "don't" that make a reminder or a pleasantry, not a prohibition. */
const BENIGN_DONT = /^(forget|worry|bother|hesitate|mind|stress|panic|rush|sweat|be afraid)\b/;
const QUESTION_START =
  /^(is|are|was|were|does|do|did|can|could|should|would|will|shall|may|might|what|what's|whats|how|where|which|who|whom|whose|when|have|has|am)\b/;

interface Ctx {
  question: boolean;
  first: boolean;
  /** The next sentence, normalized ("No. Use the logger." continues after the bare "No."). */
  next: string;
}

interface Rule {
  name: string;
  kind: CorrectionKind;
  /** Tested against one lower-cased sentence with code and quotes masked. */
  test: (s: string, ctx: Ctx) => boolean;
}

const re = (r: RegExp) => (s: string) => r.test(s);

const RULES: Rule[] = [
  {
    // "no, use pnpm", "No. Use the logger", "nope, that breaks the build", "no no no, revert that"
    name: 'leading-no',
    kind: 'correction',
    test: (s, { first, question, next }) => {
      if (!first || question) return false;
      const m = /^(no+|nope|nah)(\s+no+)*\s*([,.!;:—–-]+|\s)\s*(.*)$/.exec(s);
      if (!m) return false;
      const rest = m[4]!.trim() || next;
      if (rest === '') return false; // a bare "no" answers a question
      if (BENIGN_AFTER_NO.test(rest) || BENIGN_ACK.test(rest)) return false;
      return true;
    },
  },
  {
    // "that's wrong", "this is incorrect", "that is not what I asked", "it's not right"
    name: 'deictic-wrong',
    kind: 'correction',
    test: (s, { question }) =>
      !question &&
      /\b(that|this|it|which|your \w+)(\s*'s|\s+is|\s+was|\s+looks)\s+(still\s+|just\s+|completely\s+|totally\s+|all\s+)?(wrong|incorrect|not (right|correct|it|true|what i (asked|wanted|meant|said|need|needed))|not the (right|correct)\b|the wrong\b|not how\b)/.test(
        s,
      ),
  },
  {
    // "you're wrong", "you got it wrong", "you misunderstood", "you did it wrong"
    name: 'you-wrong',
    kind: 'correction',
    test: re(
      /\byou(\s*'re|\s+are|\s+were|\s+got (it|that|this)|\s+did (it|that|this)|\s+have (it|that|this))\s+(\w+\s+)?(wrong|incorrect|mistaken|backwards)\b|\byou (misunderstood|misread|misinterpreted|confused)\b/,
    ),
  },
  {
    // "you broke the login page", "you forgot to update the changelog", "you deleted my comment"
    name: 'you-did-harm',
    kind: 'correction',
    test: re(
      /\byou(\s+(just|also|again|still|completely))?\s+(broke|forgot|missed|ignored|deleted|removed|overwrote|reverted|dropped|skipped|lost|undid|clobbered|messed up|screwed up)\b/,
    ),
  },
  {
    // "you keep using var", "you keep adding comments"
    name: 'you-keep',
    kind: 'correction',
    test: re(/\byou (keep|kept|always|constantly) (\w+ing)\b/),
  },
  {
    // "you should have run the tests", "you shouldn't have changed the lockfile"
    name: 'should-have',
    kind: 'correction',
    test: re(/\b(you|that|this|it)\s+(should|shouldn'?t|should not|were supposed to|was supposed to)\s+(have|be|not have)\b\s+\w+/),
  },
  {
    // "I told you to use tabs", "I already said", "as I said", "I asked you not to", "I meant X"
    name: 'i-told-you',
    kind: 'correction',
    test: re(
      /\bi (already |just |clearly |specifically |explicitly )?(told|asked) you\b|\b(as|like) i (already )?(said|told you|mentioned)\b|\bi (already |just |clearly |specifically |explicitly )?said\b|\bi (meant|wanted|asked for)\b.*\bnot\b|\bi never (said|asked)\b|\bi didn'?t (ask|say|want)\b|\bthat'?s not what i\b|\bwhat i (meant|said|asked) (was|is)\b/,
    ),
  },
  {
    // "didn't I say to keep the API stable?", "why did you delete the migration?", "why are you using moment?"
    name: 'reproach-question',
    kind: 'correction',
    test: re(/\b(didn'?t|did not) i (tell|say|ask|mention)\b|\bwhy (did|are|were) you\b(?! (think|recommend|suggest))|\bwhy do you keep\b/),
  },
  {
    // "stop adding emojis", "please stop using relative imports" (but not "stop the server")
    name: 'stop-doing',
    kind: 'correction',
    test: re(
      /(^|[,;:]\s*|\bplease\s+|\bjust\s+|\band\s+)(stop|quit|cease) (\w+ing)\b(?! (server|process|container|service|job|daemon)s?\b)/,
    ),
  },
  {
    // "don't add comments to every line", "Never use any in this repo", "please don't ever ..."
    // At the start of a sentence only; "don't forget/worry/bother" are reminders.
    name: 'prohibition',
    kind: 'correction',
    test: (s, { question }) => {
      if (question) return false;
      const m = /^(please\s+|and\s+|but\s+|also\s+)?(don'?t|do not|dont|never)\s+(ever\s+|again\s+)?(\w+)/.exec(s);
      if (!m) return false;
      if (m[2] === 'never' && /^mind\b/.test(m[4]!)) return false; // "never mind"
      return !BENIGN_DONT.test(s.slice(m[0].length - m[4]!.length));
    },
  },
  {
    // "don't do that again", "do not touch the tests ever again", "... anymore"
    name: 'prohibition-again',
    kind: 'correction',
    test: re(/\b(don'?t|do not|never)\b[^.]*\b(again|anymore|any more|ever)\b/),
  },
  {
    // "actually, it should be a POST", "actually the config lives in ~/.config", "actually, no"
    name: 'actually',
    kind: 'correction',
    test: (s, { question }) =>
      !question &&
      /(^|[,;]\s*)actually\b[, ]*(no\b|not\b|don'?t\b|it|that|this|the|we|i|you|they|those|these|its|it's)\b[^?]*\b(should|shouldn'?t|must|needs?|is|are|was|were|lives?|goes|belongs|uses?|use|want|prefer|means?|meant)\b/.test(
        s,
      ),
  },
  {
    // "not jest, vitest", "Not the staging DB — the local one"
    name: 'not-x-y',
    kind: 'correction',
    test: (s, { first, question }) =>
      first && !question && /^not\s+(the\s+|a\s+|an\s+)?[\w@./~-]+(\s+[\w@./~-]+){0,3}\s*([,;:—–]|-{1,2})\s*\S/.test(s),
  },
  {
    // "it's yarn, not npm", "we use snake_case, not camelCase", "it should be const, not let", "3.11, not 3.12"
    name: 'x-not-y',
    kind: 'correction',
    test: (s, { question }) =>
      !question &&
      /\b(it'?s|it is|that'?s|should be|we use|use|we want|i want|i said|call it|name it|make it|put it in|is in|are in|goes in|go in|keep it|\d[\w.]*)\b[^,;]{0,40},\s*not\s+(the\s+|a\s+|an\s+)?[\w@./~-]+\s*[.!]*$/.test(
        s,
      ),
  },
  {
    // "use the factory function instead." (a bare trailing "instead" points at what the agent did)
    name: 'trailing-instead',
    kind: 'correction',
    test: (s, { question }) => !question && /\binstead\s*[.!]*$/.test(s) && !/\binstead of\b/.test(s),
  },
  {
    // "undo that change", "revert your last edit", "roll that back". A pointer word followed by
    // a thing ("revert that file", "undo this migration") names what to revert: a request.
    name: 'undo-that',
    kind: 'correction',
    test: re(
      /\b(undo|revert|roll ?back|back out|put back)\s+((that|this|those|these)(?=\s*([,.!;:—–-]|$|(change|changes|edit|edits)\b))|it\b|your\b|what you\b|the (change|changes|edit|edits) you\b)|\broll (that|this|it|those) back\b/,
    ),
  },
  {
    // "wrong file, I meant src/api/client.ts", "Wrong approach — we never mock the database"
    name: 'leading-wrong',
    kind: 'correction',
    test: (s, { first, question }) =>
      first && !question && /^(wrong|incorrect|not quite|not right|not correct)\b(\s+\w+)?\s*([,.!;:—–-]|$)/.test(s),
  },
  {
    // "that's the wrong branch", "you edited the wrong file"
    name: 'the-wrong',
    kind: 'correction',
    test: (s, { question }) =>
      !question && /\b(that'?s|that is|this is|it'?s|you (\w+ed|used|picked|chose|opened|changed))\s+(the|a)\s+wrong\b/.test(s),
  },
  {
    // "from now on, always run prettier", "in this repo we always use named exports", "going forward ..."
    name: 'convention',
    kind: 'convention',
    test: (s, { question }) =>
      !question &&
      (/^(from now on|going forward|in (the )?future|henceforth|for future reference)\b/.test(s) ||
        /\b(in this|in our|in the) (repo|repository|project|codebase|code base|team|company|monorepo)\b[^.]*\b(we|you)\s+(always|never|don'?t|do not|use|prefer|must)\b/.test(
          s,
        ) ||
        /\bwe (always|never|don'?t ever|do not ever)\s+\w+/.test(s) ||
        /\bwe (don'?t|do not) (use|write|put|commit|push|import|add|mock|call|name)\b/.test(s) ||
        /^(always|never) (use|add|write|run|put|call|commit|push|import|name|prefer)\b/.test(s)),
  },
];

/** Masks code and quoted text so they cannot trigger a rule. */
function mask(prompt: string): string {
  return prompt
    .replace(/```[\s\S]*?(```|$)/g, ' CODE. ')
    .replace(/`[^`\n]*`/g, ' code ')
    .replace(/^\s*>.*$/gm, ' ')
    .replace(/"[^"\n]{0,300}"|“[^”\n]{0,300}”/g, ' quoted ');
}

/** Splits into sentences (and lines), keeping each one's end punctuation. */
function sentences(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split(/\n+/)) {
    // A period inside "3.11", "client.ts" or "~/.config" does not end a sentence.
    for (const part of line.split(/(?<=[.!?])\s+/)) {
      const s = part.trim();
      if (s) out.push(s);
    }
  }
  return out;
}

function normalize(s: string): string {
  return s.toLowerCase().replace(/[’‘]/g, "'").replace(/\s+/g, ' ').trim();
}

/**
 * The correction (or convention) the prompt states, or null. Looks at the first 1,500 characters:
 * a correction comes first; a long task description further down is not one.
 */
export function detectCorrection(prompt: string): CorrectionMatch | null {
  if (typeof prompt !== 'string') return null;
  const text = mask(prompt.slice(0, 1500));
  const parts = sentences(text);
  for (let i = 0; i < parts.length; i++) {
    const raw = parts[i]!;
    const s = normalize(raw);
    const question = s.endsWith('?') && QUESTION_START.test(s);
    const ctx = { question, first: i === 0, next: i + 1 < parts.length ? normalize(parts[i + 1]!) : '' };
    for (const rule of RULES) {
      if (rule.test(s, ctx)) return { kind: rule.kind, rule: rule.name, excerpt: excerptOf(prompt, raw) };
    }
  }
  return null;
}

function excerptOf(prompt: string, sentence: string): string {
  // Quote the user's own words where the sentence survived masking intact, else the prompt's start.
  const clean = sentence.trim();
  const source = prompt.includes(clean) ? clean : prompt.trim();
  const one = source.replace(/\s+/g, ' ');
  return one.length > 200 ? `${one.slice(0, 199)}…` : one;
}
