// A pino logger whose JSON lines a test can read back.
import type { Logger } from 'pino';
import { createLogger } from '../../server/telemetry/index.ts';

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export const LEVEL = { debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const;

export function captureLogger(level = 'debug'): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  // the production logger (its redaction included), writing into `lines`
  const log = createLogger(level, 'poker', { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) });
  return { log, lines };
}

/** Resolves with the first line that matches, polling until the timeout. */
export async function waitForLine(lines: LogLine[], match: (line: LogLine) => boolean, timeoutMs = 10_000): Promise<LogLine> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = lines.find(match);
    if (found) return found;
    if (Date.now() > deadline) {
      throw new Error(`no matching log line within ${timeoutMs} ms; saw:\n${lines.map((l) => l.msg).join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}
