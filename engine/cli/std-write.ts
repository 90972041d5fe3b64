import { fstatSync, statSync, writeSync } from 'node:fs';
import { sleepSync } from '../sleep-sync.js';

// Standard output and error as file descriptors. process.stdout and process.stderr are streams
// that Node makes on first use, loading its stream, net and tty modules: 3.4 ms of a command
// that only prints one answer (measured against `node -e 0`). Writes here are synchronous, as
// Node's own are to files, pipes and terminals on Linux, so they keep their order with them.

/** /dev/null's device number (null where there is none): a character device, and no terminal. */
let devNull: number | null | undefined;

/** Whether `fd` is a terminal: a character device other than /dev/null (`tty.isatty` would load net and tty). */
export function isTerminal(fd: 0 | 1 | 2): boolean {
  try {
    const stat = fstatSync(fd);
    if (!stat.isCharacterDevice()) return false;
    devNull ??= (() => {
      try {
        return statSync('/dev/null').rdev;
      } catch {
        return null;
      }
    })();
    return stat.rdev !== devNull;
  } catch {
    return false; // closed
  }
}

/** A reader that left (EPIPE: `svc list | head`): the output is over, and so is the process, quietly. */
const endQuietly = (): never => process.exit(process.exitCode ?? 0);

/** Writes all of `text` to `fd`; on EPIPE, endQuietly. */
function writeAll(fd: 1 | 2, text: string): void {
  const bytes = Buffer.from(text);
  for (let at = 0; at < bytes.length;) {
    try {
      at += writeSync(fd, bytes, at);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // A non-blocking pipe that is full: wait a millisecond for its reader.
      if (code === 'EAGAIN') sleepSync(1);
      else if (code === 'EPIPE') endQuietly();
      else throw err;
    }
  }
}

export const writeOut = (text: string): void => writeAll(1, text);
export const writeErr = (text: string): void => writeAll(2, text);

/**
 * Runs `prepare` on process.stdout or process.stderr when something first uses it, so that a
 * command that never does makes no stream.
 */
export function whenMade(name: 'stdout' | 'stderr', prepare: (stream: NodeJS.WriteStream) => void): void {
  const made = Object.getOwnPropertyDescriptor(process, name);
  if (!made?.get || !made.configurable) {
    prepare(process[name]);
    return;
  }
  const make = made.get;
  let stream: NodeJS.WriteStream | undefined;
  Object.defineProperty(process, name, {
    configurable: true,
    enumerable: made.enumerable ?? true,
    get: () => {
      if (!stream) {
        stream = make.call(process) as NodeJS.WriteStream;
        prepare(stream);
      }
      return stream;
    },
  });
}

/**
 * For code that writes through process.stdout and process.stderr (the MCP server, the terminal
 * UI): a reader that closes the pipe early ends the process quietly.
 */
export function quietOnClosedPipe(): void {
  const onError = (err: NodeJS.ErrnoException): void => {
    if (err.code === 'EPIPE') endQuietly();
    throw err;
  };
  for (const name of ['stdout', 'stderr'] as const) whenMade(name, (stream) => stream.on('error', onError));
}
