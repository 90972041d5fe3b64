// What an operation needs from its caller besides the backend.
export interface OpContext {
  now(): Date;
  /** The agent session the write belongs to, recorded in `sources`. */
  sessionId?: string | null;
}

export const systemContext: OpContext = { now: () => new Date() };
