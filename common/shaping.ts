// Adaptive shaping: rules that match a receiving provider's SMTP answers (enhanced code, basic
// code, text) and take an action for a while — lower the provider's rate or connections, or
// suspend delivery to it (for every project, or for the project whose mail drew the answer).
// The way KumoMTA's traffic shaping automation reacts to the same answers. Pure: the gateway
// (gateway/shaping) keeps the actions; core/config.ts reads the operator's rules.
//
// The default rules follow the providers' published postmaster guidance. Where a text below was
// confirmed only on third-party pages or is from memory, its comment says so (see also
// deploy/config-reference.md, "Shaping").
import type { ShapingRule } from '../core/config.js';

export type { ShapingAction, ShapingMatch, ShapingRule } from '../core/config.js';

/** An SMTP answer to match, as the gateway's events carry it. */
export interface RemoteAnswer {
  provider: string;
  response: string;
  enhancedCode?: string;
  /** The basic code; read from the response when absent. */
  code?: number;
}

/** The basic SMTP code an answer starts with ("421-4.7.28 ..." → 421); 0 if none. */
export function basicCode(response: string): number {
  const m = /^\s*([245]\d\d)[\s-]/.exec(response);
  return m ? Number(m[1]) : 0;
}

/** The enhanced code in an answer's text ("421-4.7.28 ..." → 4.7.28), '' if none. */
export function enhancedCodeIn(response: string): string {
  return /\b([245]\.\d{1,3}\.\d{1,3})\b/.exec(response)?.[1] ?? '';
}

/** A compiled rule: its regular expression built once. */
export interface CompiledRule extends ShapingRule {
  regexp?: RegExp;
}

export function compileRules(rules: readonly ShapingRule[]): CompiledRule[] {
  return rules.map((r) => (r.match.pattern ? { ...r, regexp: new RegExp(r.match.pattern, 'i') } : { ...r }));
}

/** Whether one rule matches an answer: its provider, then each match field it gives. `unfolded`: the answer's unfold(), once for all rules. */
export function ruleMatches(rule: CompiledRule, a: RemoteAnswer, unfolded: () => string = () => unfold(a.response)): boolean {
  if (rule.providers?.length && !rule.providers.includes(a.provider)) return false;
  const m = rule.match;
  if (!m.enhancedCodes?.length && !m.codes?.length && !m.pattern) return false;
  if (m.enhancedCodes?.length) {
    const code = a.enhancedCode || enhancedCodeIn(a.response);
    if (!code || !m.enhancedCodes.some((p) => code === p || code.startsWith(p))) return false;
  }
  if (m.codes?.length && !m.codes.includes(a.code ?? basicCode(a.response))) return false;
  if (m.pattern) {
    const re = rule.regexp ?? new RegExp(m.pattern, 'i');
    // Haraka joins a multi-line answer's lines with their code prefix ("421-4.7.28 "): read the words across.
    if (!re.test(a.response) && !re.test(unfolded())) return false;
  }
  return true;
}

/** An answer's text without the code prefixes of its continuation lines. */
function unfold(response: string): string {
  return response.replace(/(^|\s)[245]\d\d[\s-](?:[245]\.\d{1,3}\.\d{1,3}\s)?/g, '$1').replace(/\s+/g, ' ');
}

export function matchRules(rules: readonly CompiledRule[], a: RemoteAnswer): CompiledRule[] {
  let text: string | undefined;
  const unfolded = () => (text ??= unfold(a.response));
  return rules.filter((r) => ruleMatches(r, a, unfolded));
}

/**
 * The rules in force: the defaults (unless `replaceDefaults`) with the operator's added; an
 * operator rule with a default's name replaces it, in its place.
 */
export function mergeRules(operator: readonly ShapingRule[], replaceDefaults: boolean, defaults: readonly ShapingRule[] = DEFAULT_RULES): ShapingRule[] {
  const own = new Map(operator.map((r) => [r.name, r]));
  const out = replaceDefaults ? [] : defaults.map((d) => own.get(d.name) ?? d);
  const taken = new Set(out.map((r) => r.name));
  for (const r of operator) if (!taken.has(r.name)) out.push(r);
  return out;
}

/**
 * The default rules. Durations follow what the providers say about when to retry; a rate halved
 * is what their guidance asks for ("slow down"), a suspension where mail would keep being refused.
 */
export const DEFAULT_RULES: ShapingRule[] = [
  {
    name: 'google-unsolicited-rate',
    providers: ['google'],
    match: { enhancedCodes: ['4.7.28'] },
    action: { kind: 'rate', factor: 0.5 },
    durationSeconds: 3600,
    source: 'https://support.google.com/mail/answer/81126',
    example:
      '421-4.7.28 [203.0.113.42] Our system has detected an unusual rate of unsolicited mail originating from your IP address. To protect our users from spam, mail sent from your IP address has been temporarily rate limited. Please visit https://support.google.com/mail/?p=UnsolicitedRateLimitError to review our Bulk Email Senders Guidelines. - gsmtp',
    note: 'Gmail rate-limits the IP for its volume of unwanted mail: halve the rate for an hour.',
  },
  {
    name: 'google-receiving-rate',
    providers: ['google'],
    match: { enhancedCodes: ['4.2.1'], pattern: 'receiving mail at a rate' },
    action: { kind: 'rate', factor: 0.75 },
    durationSeconds: 600,
    source: 'https://support.google.com/mail/answer/3726730',
    example:
      '450-4.2.1 The user you are trying to contact is receiving mail at a rate that prevents additional messages from being delivered. Please resend your message at a later time. If the user is able to receive mail at that time, your message will be delivered. For more information, please visit https://support.google.com/mail/?p=ReceivingRate - gsmtp',
    note: "About one recipient's incoming rate, not ours: only a mild slowdown for ten minutes.",
  },
  {
    name: 'google-unauthenticated',
    providers: ['google'],
    match: { enhancedCodes: ['4.7.26', '4.7.27', '4.7.30'] },
    action: { kind: 'suspend', scope: 'project' },
    durationSeconds: 1800,
    source: 'https://support.google.com/mail/answer/81126',
    example:
      '421-4.7.26 This mail has been rate limited because it is unauthenticated. Gmail requires all senders to authenticate with either SPF or DKIM. Authentication results: DKIM = did not pass SPF [example.com] with ip: [203.0.113.42] = did not pass For instructions on setting up authentication, go to https://support.google.com/mail/answer/81126#authentication - gsmtp',
    note: "The sending project's domain fails SPF/DKIM: slowing down does not help, so that project's mail waits (30 min) while the others go on. Text from memory.",
  },
  {
    name: 'google-low-domain-reputation',
    providers: ['google'],
    match: { codes: [421], pattern: 'low reputation of the sending domain' },
    action: { kind: 'suspend', scope: 'project' },
    durationSeconds: 3600,
    source: 'https://support.google.com/mail/answer/188131',
    example:
      '421-4.7.0 [203.0.113.42] Our system has detected that this message is suspicious due to the very low reputation of the sending domain. To best protect our users from spam, the message has been blocked. Please visit https://support.google.com/mail/answer/188131 for more information. - gsmtp',
    note: "The project's own domain: its mail waits an hour, other projects are not slowed.",
  },
  {
    name: 'google-low-ip-reputation',
    providers: ['google'],
    match: { codes: [421], pattern: 'low reputation of the sending IP' },
    action: { kind: 'rate', factor: 0.5 },
    durationSeconds: 3600,
    source: 'https://support.google.com/mail/answer/188131',
    example:
      '421-4.7.0 [203.0.113.42] Our system has detected that this message is suspicious due to the very low reputation of the sending IP address. To protect our users from spam, mail sent from your IP address has been temporarily rate limited. Please visit https://support.google.com/mail/answer/188131 for more information. - gsmtp',
    note: 'The IP, shared by every project: halve the rate for an hour.',
  },
  {
    name: 'yahoo-complaints',
    providers: ['yahoo'],
    match: { pattern: '\\[TS0[1-3]\\]' },
    action: { kind: 'suspend', scope: 'provider' },
    durationSeconds: 4 * 3600,
    source: 'https://senders.yahooinc.com/smtp-error-codes/',
    example:
      '421 4.7.0 [TS01] Messages from 203.0.113.42 temporarily deferred due to user complaints - 4.16.55.1; see https://postmaster.yahooinc.com/error-codes',
    note: 'Yahoo asks to retry 4 hours after TS01-TS03 (help.yahoo.com, SLN3434): every project waits 4 h.',
  },
  {
    name: 'yahoo-volume',
    providers: ['yahoo'],
    match: { pattern: '\\[TSS0[4-5]\\]' },
    action: { kind: 'rate', factor: 0.5 },
    durationSeconds: 3600,
    source: 'https://senders.yahooinc.com/smtp-error-codes/',
    example:
      '421 4.7.0 [TSS04] Messages from 203.0.113.42 temporarily deferred due to unexpected volume or user complaints - 4.16.55.1; see https://postmaster.yahooinc.com/error-codes',
    note: 'Unexpected volume: halve the rate for an hour.',
  },
  {
    name: 'microsoft-ip-reputation',
    providers: ['microsoft'],
    match: { enhancedCodes: ['4.7.650', '4.7.651'] },
    action: { kind: 'rate', factor: 0.5 },
    durationSeconds: 3600,
    source: 'https://sendersupport.olc.protection.outlook.com/pm/troubleshooting.aspx',
    example:
      '451 4.7.650 The mail server [203.0.113.42] has been temporarily rate limited due to IP reputation. For e-mail delivery information, see https://aka.ms/postmaster (S775)',
    note: 'Rate limited for IP reputation: halve the rate for an hour.',
  },
  {
    name: 'microsoft-server-busy',
    providers: ['microsoft'],
    match: { enhancedCodes: ['4.7.500'], pattern: 'server busy' },
    action: { kind: 'connections', factor: 0.5 },
    durationSeconds: 900,
    source:
      'https://learn.microsoft.com/en-us/exchange/mail-flow-best-practices/non-delivery-reports-in-exchange-online/non-delivery-reports-in-exchange-online',
    example: '451 4.7.500 Server busy. Please try again later from [203.0.113.42]. (S3150) [Name=Protocol Filter Agent][AGT=PFA]',
    note: 'S3140/S3150/S77719 throttling of concurrent traffic: half the connections for 15 minutes.',
  },
  {
    name: 'mailru-rate',
    providers: ['mailru'],
    match: { codes: [421, 451], pattern: 'frequency limit|too many (connections|messages)|rate ?limit' },
    action: { kind: 'connections', factor: 0.5 },
    durationSeconds: 1800,
    source: 'https://help.mail.ru/developers/postmaster',
    example: '421 4.7.0 IP frequency limit exceeded',
    note: 'Text from third-party reports, not confirmed on the Mail.ru postmaster pages: half the connections for 30 minutes.',
  },
  {
    name: 'yandex-rate',
    providers: ['yandex'],
    match: { codes: [421, 451], pattern: 'too many connections|rate ?limit|try again later|come back later' },
    action: { kind: 'rate', factor: 0.5 },
    durationSeconds: 1800,
    source: 'https://yandex.com/support/mail/web/spam/honest-mailers.html',
    example: '451 4.7.1 Sorry, the service is currently unavailable. Please come back later.',
    note: 'Text from memory and third-party reports: halve the rate for 30 minutes.',
  },
  {
    name: 'apple-rate',
    providers: ['apple'],
    match: { enhancedCodes: ['4.7.1'], pattern: 'rate limit|too many' },
    action: { kind: 'rate', factor: 0.5 },
    durationSeconds: 1800,
    source: 'https://support.apple.com/en-us/102322',
    example: '421 4.7.1 Message rejected due to rate limiting, please try again later',
    note: 'Text from third-party reports (Apple publishes the guidance, not the texts): halve the rate for 30 minutes.',
  },
  {
    name: 'gmx-rate',
    providers: ['gmx'],
    match: { codes: [421, 450, 451], pattern: 'too many connections|rate ?limit|temporarily (not available|rejected)' },
    action: { kind: 'connections', factor: 0.5 },
    durationSeconds: 1800,
    source: 'https://postmaster.gmx.net/en/error-messages',
    example: '421 gmx.net (mxgmx001) Nemesis ESMTP Service not available. Too many connections from your IP address',
    note: 'Text from memory: half the connections for 30 minutes.',
  },
];
