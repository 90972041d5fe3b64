// The static Cursor rules file `.cursor/rules/svc.mdc` (`svc init --cursor` writes it). Project
// rules are Markdown with a front matter of `description`, `globs` and `alwaysApply`; this one
// applies to every request. The `svc-dynamic*.mdc` files beside it are written by the hooks at
// run time and are gitignored.

export const CURSOR_STATIC_RULES_TEXT = `---
description: svc memory - recall what this project has learned before working, record what you learn
alwaysApply: true
---
# svc memory

This project uses svc, a memory for AI agents. An engram is one learned statement (a convention,
a correction, a procedure, a decision) that outlives this conversation. The \`svc\` MCP server gives
you its tools.

- Before a non-trivial task, recall what is known about it (\`svc_recall\` with a short query naming
  the subject). Follow the engrams you get unless the user says otherwise.
- When the user corrects you, states a preference or a project convention, or you discover a fact
  that will matter next time, save it with \`svc_learn\`: one self-contained statement, with the
  right type (behavioral, terminological, procedural, architectural) and a domain when one fits.
- When a new engram replaces an older one, pass the older id in \`supersedes\` instead of leaving
  both.
- Tell svc which recalled engrams helped and which misled (feedback positive or negative).
- Never store secrets, keys or personal data in engrams.
- Files named \`svc-dynamic*.mdc\` in this folder are written by svc's hooks with context for the
  current task: read them, do not edit them.
`;
