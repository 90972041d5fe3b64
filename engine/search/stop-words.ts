// English stop words for queries: the NLTK English list (itself close to the Snowball list),
// without the entries that carry an apostrophe (the tokenizer splits "didn't" into "didn" and
// "t", both listed) and without "won" (a content word far more often than a piece of "won't"),
// plus the modal verbs and question words NLTK lacks. Questions ("What did Caroline research?")
// are mostly such words; in an OR query each one matches half the store and buries the words
// that matter. Month names and "may" are deliberately absent.

const NLTK_ENGLISH = `
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she
her hers herself it its itself they them their theirs themselves what which who whom this that
these those am is are was were be been being have has had having do does did doing a an the and
but if or because as until while of at by for with about against between into through during
before after above below to from up down in out on off over under again further then once here
there when where why how all any both each few more most other some such no nor not only own
same so than too very s t can will just don should now d ll m o re ve y ain aren couldn didn
doesn hadn hasn haven isn ma mightn mustn needn shan shouldn wasn weren wouldn
`;

const QUESTION_AND_MODAL = `would could might must shall cannot whose whatever whenever wherever whichever whoever also ever yet`;

export const STOP_WORDS: ReadonlySet<string> = new Set(`${NLTK_ENGLISH} ${QUESTION_AND_MODAL}`.split(/\s+/).filter((w) => w.length > 0));

export function isStopWord(lowercased: string): boolean {
  return STOP_WORDS.has(lowercased);
}

// Words of an instruction rather than of its topic: prompts are full of them ("use a transaction",
// "please add"), and so are engrams ("Use pnpm, never npm"), so a match on them alone pulled
// unrelated engrams into an injection. Injection drops them from its task before it recalls;
// recall keeps them (in a question such as "How does Jon use the clipboard?" they carry meaning),
// and the index keeps them.
const INSTRUCTION_WORDS = /(?<![\p{L}\p{N}_'-])(?:use|uses|using|please)(?![\p{L}\p{N}_'-])/giu;

/** The text without its instruction words (see above). */
export function withoutInstructionWords(text: string): string {
  return text.replace(INSTRUCTION_WORDS, ' ');
}
