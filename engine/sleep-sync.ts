// A synchronous pause, for the few waits that cannot yield to the event loop (a write to a full
// pipe, a lock file, a SQLite lock SQLite itself would not wait for).

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Blocks this thread for `ms` milliseconds. */
export function sleepSync(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}
