// How long a search query and a task may be, wherever they come in (CLI, MCP tools, the hub's
// REST API): the work a recall makes grows with its text. Its own module, with no imports, so
// the CLI's hot path checks them without loading zod.

/** A search query (recall, timeline). */
export const QUERY_MAX = 2000;
/** A task (inject), a rationale, a summary line. */
export const TASK_MAX = 4000;
