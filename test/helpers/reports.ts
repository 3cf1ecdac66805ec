// Real delivery reports as receiving MTAs send them: RFC 3464 DSNs and RFC 5965 ARF
// complaints (multipart/report), plus a List-Unsubscribe mail, and a way to send them
// over SMTP to the inbound port.
import crypto from 'node:crypto';
import SMTPConnection from 'nodemailer/lib/smtp-connection';

const CRLF = '\r\n';

export interface DsnRecipient {
  recipient: string;
  action: 'failed' | 'delayed' | 'delivered' | 'relayed' | 'expanded';
  status: string;
  diagnostic?: string;
}

/** A DSN from mx.inbox.test to `to` (our VERP address), about an original message. */
export function dsn(to: string, recipients: DsnRecipient[], original = 'Message-ID: <orig@acme.test>\r\nFrom: hello@acme.test\r\nSubject: Hello\r\n'): Buffer {
  const b = `dsn-${crypto.randomBytes(6).toString('hex')}`;
  const perRecipient = recipients
    .map((r) =>
      [
        `Final-Recipient: rfc822; ${r.recipient}`,
        `Action: ${r.action}`,
        `Status: ${r.status}`,
        'Remote-MTA: dns; mx.inbox.test',
        ...(r.diagnostic ? [`Diagnostic-Code: smtp; ${r.diagnostic}`] : []),
        'Last-Attempt-Date: Sun, 1 Mar 2026 10:00:00 +0000',
      ].join(CRLF),
    )
    .join(CRLF + CRLF);
  return Buffer.from(
    [
      'From: Mail Delivery System <MAILER-DAEMON@mx.inbox.test>',
      `To: <${to}>`,
      'Subject: Delivery Status Notification',
      `Message-ID: <${b}@mx.inbox.test>`,
      'MIME-Version: 1.0',
      `Content-Type: multipart/report; report-type=delivery-status; boundary="${b}"`,
      '',
      `--${b}`,
      'Content-Type: text/plain; charset=us-ascii',
      '',
      'This is the mail system at host mx.inbox.test. Your message could not be delivered to everyone.',
      '',
      `--${b}`,
      'Content-Type: message/delivery-status',
      '',
      'Reporting-MTA: dns; mx.inbox.test',
      'Arrival-Date: Sun, 1 Mar 2026 09:59:00 +0000',
      '',
      perRecipient,
      '',
      `--${b}`,
      'Content-Type: text/rfc822-headers',
      '',
      original.trimEnd(),
      '',
      `--${b}--`,
      '',
    ].join(CRLF),
  );
}

/** An ARF complaint (RFC 5965) to `to`, about a message to `recipient` (empty: redacted). */
export function arf(o: { to: string; recipient: string; feedbackType: string; originalTo?: string; originalFrom?: string }): Buffer {
  const b = `arf-${crypto.randomBytes(6).toString('hex')}`;
  return Buffer.from(
    [
      'From: <fbl@inbox.test>',
      `To: <${o.to}>`,
      'Subject: FW: complaint',
      `Message-ID: <${b}@inbox.test>`,
      'MIME-Version: 1.0',
      `Content-Type: multipart/report; report-type=feedback-report; boundary="${b}"`,
      '',
      `--${b}`,
      'Content-Type: text/plain; charset=us-ascii',
      '',
      'This is an email abuse report for an email message received from IP 127.0.0.1.',
      '',
      `--${b}`,
      'Content-Type: message/feedback-report',
      '',
      `Feedback-Type: ${o.feedbackType}`,
      'User-Agent: TestFBL/1.0',
      'Version: 1',
      `Original-Mail-From: <${o.originalFrom ?? o.to}>`,
      ...(o.recipient ? [`Original-Rcpt-To: <${o.recipient}>`] : []),
      'Arrival-Date: Sun, 1 Mar 2026 10:00:00 +0000',
      'Source-IP: 127.0.0.1',
      'Reported-Domain: acme.test',
      '',
      `--${b}`,
      'Content-Type: message/rfc822',
      'Content-Disposition: inline',
      '',
      'From: hello@acme.test',
      `To: ${o.originalTo ?? (o.recipient || 'redacted@inbox.test')}`,
      'Subject: Spring sale',
      'Message-ID: <orig@acme.test>',
      '',
      'Buy now.',
      '',
      `--${b}--`,
      '',
    ].join(CRLF),
  );
}

/** Sends raw mail over SMTP to the inbound port, as a receiving MTA would. Resolves with the server's answer. */
/** from '' is the null sender (MAIL FROM:<>), as DSNs are sent. */
export async function sendToInbound(port: number, from: string, to: string, raw: Buffer): Promise<string> {
  const c = new SMTPConnection({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, name: 'mx.inbox.test' });
  await new Promise<void>((resolve, reject) => {
    c.once('error', reject);
    c.connect(() => resolve());
  });
  try {
    return await new Promise<string>((resolve, reject) => c.send({ from, to: [to] }, raw, (err, info) => (err ? reject(err) : resolve(info.response))));
  } finally {
    c.quit();
  }
}
