// gateway/inbound/report.ts: reading DSN and ARF reports (built here as real multipart/report
// messages) and unsubscribe mails into events about the one recipient they concern.
import { describe, expect, it } from 'vitest';
import { parseFieldBlocks, readInbound } from '../../../gateway/inbound/report.js';
import { arf, dsn } from '../../helpers/reports.js';

describe('reports that come back', () => {
  it('reads DSN fields, folded lines included', () => {
    const [msg, rcpt] = parseFieldBlocks(
      'Reporting-MTA: dns; mx.test\r\n\r\nFinal-Recipient: rfc822; Ann@Inbox.test\r\nDiagnostic-Code: smtp; 550 5.1.1\r\n  user unknown\r\n',
    );
    expect(msg!.get('reporting-mta')).toBe('dns; mx.test');
    expect(rcpt!.get('diagnostic-code')).toBe('smtp; 550 5.1.1 user unknown');
  });

  it('turns a DSN into bounced / rejected / deferred / delivered per recipient', async () => {
    const raw = dsn('b+x@pg-bounces.acme.test', [
      { recipient: 'gone@inbox.test', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 <gone@inbox.test>: user unknown' },
      { recipient: 'spam@inbox.test', action: 'failed', status: '5.7.1', diagnostic: '550 5.7.1 message refused as spam' },
      { recipient: 'slow@inbox.test', action: 'delayed', status: '4.2.2', diagnostic: '452 4.2.2 mailbox full' },
      { recipient: 'ok@inbox.test', action: 'delivered', status: '2.0.0' },
      { recipient: 'fwd@inbox.test', action: 'relayed', status: '2.0.0' },
    ]);
    const out = await readInbound(raw, 'b+0123456789abcdef0123456789abcdef.0123456789abcdef', 'MAILER-DAEMON@mx.inbox.test');
    expect(out.map((o) => [o.type, o.recipient, o.enhancedCode])).toEqual([
      ['bounced', 'gone@inbox.test', '5.1.1'],
      ['rejected', 'spam@inbox.test', '5.7.1'],
      ['deferred', 'slow@inbox.test', '4.2.2'],
      ['delivered', 'ok@inbox.test', '2.0.0'],
    ]);
    expect(out[0]).toMatchObject({ source: 'dsn', mx: 'mx.inbox.test', response: '550 5.1.1 <gone@inbox.test>: user unknown' });
  });

  it('turns an ARF abuse report into a complaint about its recipient; not-spam is none', async () => {
    const out = await readInbound(arf({ to: 'b+x@pg-bounces.acme.test', recipient: 'ann@inbox.test', feedbackType: 'abuse' }), 'b+x', 'fbl@inbox.test');
    expect(out).toEqual([
      { type: 'complained', recipient: 'ann@inbox.test', response: 'abuse report from TestFBL/1.0', enhancedCode: '', mx: '', source: 'arf' },
    ]);
    // Redacted recipient: taken from the attached original when it names one.
    const redacted = await readInbound(arf({ to: 'b+x@pg-bounces.acme.test', recipient: '', originalTo: 'bob@inbox.test', feedbackType: 'abuse' }), 'b+x', '');
    expect(redacted[0]).toMatchObject({ recipient: 'bob@inbox.test' });
    expect(await readInbound(arf({ to: 'b+x@x', recipient: 'ann@inbox.test', feedbackType: 'not-spam' }), 'b+x', '')).toEqual([]);
    expect(await readInbound(Buffer.from('Subject: Out of office\r\n\r\nI am away.\r\n'), 'b+x', 'ann@inbox.test')).toEqual([]);
    expect(await readInbound(Buffer.from('Subject: unsubscribe\r\n\r\n'), 'u+x', 'ann@inbox.test')).toMatchObject([{ type: 'unsubscribed', source: 'mailto' }]);
  });
});
