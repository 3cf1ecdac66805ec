// SMS senders, pluggable per project: an HTTP sender (POST JSON {to, text} to
// the project's gateway URL, bearer = its secret) and a log sender for
// development. The log sender never writes the message (it holds the code):
// in development read codes with a test-kind key instead.
import type { Logger } from '../core/log.js';
import { settings } from './settings.js';

export interface SmsSender {
  send(to: string, text: string): Promise<void>;
}

export const maskPhone = (phone: string): string => phone.slice(0, 4) + '*'.repeat(Math.max(0, phone.length - 6)) + phone.slice(-2);

export class HttpSmsSender implements SmsSender {
  constructor(
    private readonly url: string,
    private readonly token: string | null,
  ) {}

  async send(to: string, text: string): Promise<void> {
    const res = await fetch(this.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(this.token ? { authorization: `Bearer ${this.token}` } : {}) },
      body: JSON.stringify({ to, text }),
      redirect: 'manual',
      signal: AbortSignal.timeout(settings.providerTimeoutMs),
    });
    await res.body?.cancel();
    if (!res.ok) throw new Error(`SMS gateway answered ${res.status}`);
  }
}

export class LogSmsSender implements SmsSender {
  constructor(private readonly log: Logger) {}

  async send(to: string, text: string): Promise<void> {
    this.log.info({ to: maskPhone(to), chars: text.length }, 'sms (log sender): message not delivered; use a test-kind key to read codes');
  }
}
