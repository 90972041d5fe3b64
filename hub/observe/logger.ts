import { Writable } from 'node:stream';
import pino from 'pino';
import { SvcError } from '../../engine/errors.js';

// The hub's one logger: a JSON line per request and per notable event (pino), on stderr; readable
// lines instead when stderr is a terminal. Every line has `time`, `level` and `event`; the fields
// are facts about the call or the event, never a token, key, secret, cookie, engram text or a
// request body. Modules take a HubLogger and say `log.warn({ event: 'audit.retry', ... }, 'text')`.

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The facts of one line; `event` names what happened (`request`, `start`, `audit.retry`, `webhook.disabled`, ...). */
export interface LogFields {
  event: string;
  [field: string]: unknown;
}

export type LogFn = (fields: LogFields, msg?: string) => void;

export interface HubLogger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  isLevelEnabled(level: LogLevel): boolean;
}

/** What a module that logs accepts: the hub's logger, or (tests, tools) a function given each line's message. */
export type LogOption = HubLogger | ((message: string) => void);

/** SVC_HUB_LOG_LEVEL, checked: one of LOG_LEVELS (default info). */
export function logLevelFrom(env: NodeJS.ProcessEnv = process.env): LogLevel {
  const raw = env.SVC_HUB_LOG_LEVEL;
  if (raw === undefined || raw === '') return 'info';
  const level = raw.trim().toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level))
    throw new SvcError('invalid', `SVC_HUB_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${raw}")`);
  return level as LogLevel;
}

export interface LoggerOptions {
  /** Default: SVC_HUB_LOG_LEVEL (checked), else info. */
  level?: LogLevel;
  /** Each JSON line (without its newline) goes here instead of stderr: tests capture the log with it. */
  sink?: (line: string) => void;
  /** Readable lines instead of JSON; default: when stderr is a terminal (and no sink is given). */
  pretty?: boolean;
  /** The file descriptor JSON lines go to (default 2, stderr). */
  fd?: number;
}

// Field names that must never carry a value into the log, whatever a caller passes: a second line of defence.
const REDACT = ['token', 'secret', 'password', 'authorization', 'cookie', 'api_key', 'client_secret', 'body', 'statement'];

export function createLogger(o: LoggerOptions = {}): HubLogger {
  const level = o.level ?? logLevelFrom();
  const pretty = o.pretty ?? (!o.sink && o.fd === undefined && process.stderr.isTTY === true);
  const destination = o.sink
    ? lineStream(o.sink)
    : pretty
      ? lineStream((line) => process.stderr.write(`${readable(line)}\n`))
      : pino.destination({ dest: o.fd ?? 2, sync: true });
  return pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // Top-level names only: the fields are flat, and a wildcard path costs ~15 µs a line.
      redact: { paths: REDACT, censor: '[redacted]' },
    },
    destination,
  ) as unknown as HubLogger;
}

/** A logger that writes nothing. */
export const SILENT: HubLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  isLevelEnabled: () => false,
};

/** The hub's logger as given, or a function called with each line's message (its event when it has none). */
export function asLogger(log: LogOption | undefined, fallback: () => HubLogger = () => createLogger()): HubLogger {
  if (log === undefined) return fallback();
  if (typeof log !== 'function') return log;
  const say: LogFn = (fields, msg) => log(msg ?? fields.event);
  return { debug: say, info: say, warn: say, error: say, isLevelEnabled: () => true };
}

/** An error as log fields: its class, code and first line; the stack only for internal errors. */
export function errorFields(err: unknown, stack = false): Record<string, unknown> {
  if (!(err instanceof Error)) return { error: String(err).split('\n')[0]!.slice(0, 500) };
  const code = (err as { code?: unknown }).code;
  return {
    error: err.message.split('\n')[0]!.slice(0, 500),
    error_class: err.name,
    ...(typeof code === 'string' || typeof code === 'number' ? { error_code: code } : {}),
    ...(stack && err.stack
      ? {
          stack: err.stack
            .split('\n')
            .filter((l) => /^\s+at /.test(l))
            .slice(0, 20)
            .join('\n'),
        }
      : {}),
  };
}

function lineStream(write: (line: string) => void): Writable {
  return new Writable({
    decodeStrings: false,
    write(chunk: string | Buffer, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) write(line);
      done();
    },
  });
}

const COLOUR: Record<string, string> = { trace: '90', debug: '90', info: '36', warn: '33', error: '31', fatal: '31' };

/** A JSON line as a terminal line: `12:00:01.123 INFO  request GET /api/v1/recall 200 4 ms 812 B org=acme ...`. */
export function readable(line: string, colour = process.stderr.hasColors?.() === true && !process.env.NO_COLOR): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const { time, level, event, msg, pid: _pid, ...rest } = o;
  const label = String(level ?? '')
    .toUpperCase()
    .padEnd(5);
  const head = `${String(time ?? '').slice(11, 23)} ${colour && COLOUR[String(level)] ? `\x1b[${COLOUR[String(level)]}m${label}\x1b[0m` : label}`;
  const parts: string[] = [head, String(event ?? '')];
  if (event === 'request') {
    const { method, route, status, latency_ms, bytes, ...more } = rest;
    parts.push(`${method} ${route} ${status} ${latency_ms} ms${bytes === undefined || bytes === null ? '' : ` ${bytes} B`}`);
    for (const k of Object.keys(rest)) if (!(k in more)) delete rest[k];
  }
  if (msg !== undefined) parts.push(String(msg));
  for (const [k, v] of Object.entries(rest)) {
    if (k === 'stack') continue;
    parts.push(`${k}=${typeof v === 'string' ? (/\s/.test(v) ? JSON.stringify(v) : v) : JSON.stringify(v)}`);
  }
  return parts.join(' ') + (typeof rest.stack === 'string' ? `\n${rest.stack}` : '');
}
