// JSON log lines in pino's shape ({level, time, proc, pid, name, ...fields, msg}) without
// loading pino: for the supervisor, which writes a handful of lines and is meant to stay
// small (pino costs it about 6 MB of its ~48 MB). Everything else logs through core/log.ts.
const LEVELS = { debug: 20, info: 30, warn: 40, error: 50 } as const;
type Level = keyof typeof LEVELS;

export type LineLogger = Record<Level, (fieldsOrMsg: Record<string, unknown> | string, msg?: string) => void>;

export function createLineLogger(name: string, level: string): LineLogger {
  const min = LEVELS[level as Level] ?? LEVELS.info;
  const write = (lvl: Level) => (fieldsOrMsg: Record<string, unknown> | string, msg?: string) => {
    if (LEVELS[lvl] < min) return;
    const fields = typeof fieldsOrMsg === 'string' ? {} : fieldsOrMsg;
    const text = typeof fieldsOrMsg === 'string' ? fieldsOrMsg : msg;
    process.stdout.write(`${JSON.stringify({ level: LEVELS[lvl], time: Date.now(), proc: name, pid: process.pid, name, ...fields, msg: text })}\n`);
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}
