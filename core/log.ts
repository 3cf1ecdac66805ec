// JSON logs on stdout (pino). Secrets are redacted by path wherever they can appear.
import { pino, type Logger } from 'pino';

export const redactPaths = [
  'req.headers.authorization',
  'req.headers["x-service-key"]',
  'headers.authorization',
  'headers["x-service-key"]',
  '*.password',
  '*.secret',
  '*.token',
  '*.key',
  '*.apiKey',
];

export function createLogger(name: string, level = process.env.POSTGATE_LOG_LEVEL || 'info'): Logger {
  return pino({ name, level, redact: { paths: redactPaths, censor: '[redacted]' }, base: { proc: name, pid: process.pid } });
}

export type { Logger };
