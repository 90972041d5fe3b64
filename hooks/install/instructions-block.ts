// The block svc writes into a host's instructions file (VS Code's .github/copilot-instructions.md)
// where the host adds nothing of svc's to the model's request before a prompt: it tells the agent
// to fetch memory itself and to record what it learns. Fenced by markers so a second `svc init`
// replaces svc's block and nothing else of the file.

export const BLOCK_BEGIN = '<!-- svc:begin (written by svc init; svc replaces what is between these lines) -->';
export const BLOCK_END = '<!-- svc:end -->';

export const INSTRUCTIONS = `## Memory (svc)

This project uses svc, a memory of what the team learned: corrections, conventions, decisions
(engrams). The \`svc\` MCP server gives you its tools.

- Before you start a task, call \`svc_inject\` with the task in one line, and follow the
  DIRECTIVES and CONSTRAINTS it returns unless the user says otherwise.
- When the user corrects you or states a convention, record it at once with \`svc_learn\`: one
  short, general statement; pass \`supersedes\` when it replaces an engram you were shown.
- When the task is done, send \`svc_feedback\` on the engrams you were given (positive when one
  helped, negative when one misled).
- Never store secrets, keys or personal data in engrams.`;

/** `text` with svc's block in place of the old one, or appended (a new file holds only the block). */
export function withInstructionsBlock(text: string | null): string {
  const block = `${BLOCK_BEGIN}\n${INSTRUCTIONS}\n${BLOCK_END}\n`;
  const existing = text ?? '';
  const start = existing.indexOf(BLOCK_BEGIN.slice(0, 16));
  const end = existing.indexOf(BLOCK_END);
  if (start >= 0 && end > start) return existing.slice(0, start) + block + existing.slice(end + BLOCK_END.length).replace(/^\r?\n/, '');
  if (existing.trim() === '') return block;
  return `${existing.replace(/\s*$/, '')}\n\n${block}`;
}

/** Whether `text` holds svc's block as the current svc writes it. */
export function hasCurrentBlock(text: string | null): boolean {
  return text !== null && text.includes(`${BLOCK_BEGIN}\n${INSTRUCTIONS}\n${BLOCK_END}`);
}
