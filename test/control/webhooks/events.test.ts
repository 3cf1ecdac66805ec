// control/webhooks/events.ts: webhook event names as Resend writes them, to and from an endpoint's
// filter in postgate's own vocabulary.
import { describe, expect, it } from 'vitest';
import { EVENT_KINDS } from '../../../common/status.js';
import { EVENT_NAMES, eventsOfFilter, FILTER_TOKENS, filterOfEvents } from '../../../control/webhooks/events.js';

describe('filterOfEvents', () => {
  it('Resend’s names to our kinds, each once, in the order given', () => {
    expect(filterOfEvents(['email.delivered', 'email.bounced', 'email.delivered'])).toEqual({ filter: ['delivered', 'bounced'] });
    expect(filterOfEvents(['email.delivery_delayed'])).toEqual({ filter: ['deferred'] });
    expect(filterOfEvents(['user.created', 'sign_in.failed'])).toEqual({ filter: ['user.created', 'sign_in.failed'] });
    expect(filterOfEvents([])).toEqual({ filter: [] });
  });

  it('a name Resend has but postgate never sends is accepted as it is; one it is also a kind of ours maps to the kind', () => {
    expect(filterOfEvents(['contact.created'])).toEqual({ filter: ['contact.created'] });
    // Open and click tracking's events are ours now.
    expect(filterOfEvents(['email.opened', 'email.clicked'])).toEqual({ filter: ['opened', 'clicked'] });
    expect(filterOfEvents(['email.scheduled'])).toEqual({ filter: ['scheduled'] });
  });

  it('names the first unknown name', () => {
    expect(filterOfEvents(['email.sent', 'email.exploded', 'nope'])).toEqual({ unknown: 'email.exploded' });
    expect(filterOfEvents(['sent'])).toEqual({ unknown: 'sent' });
  });
});

describe('eventsOfFilter', () => {
  it('our kinds in Resend’s names; an empty filter lists every email event postgate sends', () => {
    expect(eventsOfFilter(['delivered', 'deferred', 'user.created'])).toEqual(['email.delivered', 'email.delivery_delayed', 'user.created']);
    expect(eventsOfFilter([])).toEqual(EVENT_KINDS.map((k) => (k === 'deferred' ? 'email.delivery_delayed' : `email.${k}`)));
  });

  it('every filter token comes back to itself through Resend’s names', () => {
    for (const t of FILTER_TOKENS) expect(filterOfEvents(eventsOfFilter([t])), t).toEqual({ filter: [t] });
    expect(new Set(EVENT_NAMES).size).toBe(EVENT_NAMES.length);
  });
});
