// Whether a process of this machine still runs: lock and temp files name their writer's pid, and
// one whose writer is gone may be taken over or removed. EPERM means it runs as another user.

export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
