// Delivery event vocabulary on the wire. The store, the API and webhooks show the
// lower-case names; the gateway sends enums. One table each way, so both sides
// agree on every name.
import type { DeliveryEventType } from '../common/status.js';
import { EventCause, EventSource, EventType } from './gen/postgate/gateway/v1/gateway_pb.js';

const TYPES = {
  [EventType.UNSPECIFIED]: '',
  [EventType.SENDING]: 'sending',
  [EventType.SENT]: 'sent',
  [EventType.DEFERRED]: 'deferred',
  [EventType.BOUNCED]: 'bounced',
  [EventType.REJECTED]: 'rejected',
  [EventType.DELIVERED]: 'delivered',
  [EventType.COMPLAINED]: 'complained',
  [EventType.UNSUBSCRIBED]: 'unsubscribed',
  // Not a delivery event: mail received for a receiving domain (DeliveryEvent.inbound), stored apart by control.
  [EventType.RECEIVED]: 'received',
} as const satisfies Record<EventType, DeliveryEventType | 'received' | ''>;

const CAUSES = {
  [EventCause.UNSPECIFIED]: '',
  [EventCause.RECEIVER]: 'receiver',
  [EventCause.NETWORK]: 'network',
  [EventCause.PACING]: 'pacing',
  [EventCause.SHAPING]: 'shaping',
  [EventCause.SUSPENDED]: 'suspended',
} as const satisfies Record<EventCause, string>;

const SOURCES = {
  [EventSource.UNSPECIFIED]: '',
  [EventSource.SMTP]: 'smtp',
  [EventSource.DSN]: 'dsn',
  [EventSource.ARF]: 'arf',
  [EventSource.MAILTO]: 'mailto',
} as const satisfies Record<EventSource, string>;

/** A delivery event type (common/status.ts) that the wire has a value for. */
export type EventTypeName = Exclude<(typeof TYPES)[EventType], '' | 'received'>;
/** '' when the event is not a delay or refusal. */
export type EventCauseName = (typeof CAUSES)[EventCause];
/** '' when not stated (the gateway's own SMTP attempt). */
export type EventSourceName = (typeof SOURCES)[EventSource];

const reverse = <E extends number, N extends string>(table: Record<E, N>): Map<string, E> =>
  new Map(Object.entries(table).map(([value, name]) => [name as string, Number(value) as E]));
const TYPE_OF = reverse<EventType, string>(TYPES);
const CAUSE_OF = reverse<EventCause, string>(CAUSES);
const SOURCE_OF = reverse<EventSource, string>(SOURCES);

/** The name of a delivery event's type; undefined for UNSPECIFIED, RECEIVED (not a delivery event) and a value this build does not know. */
export const eventTypeName = (t: EventType): EventTypeName | undefined =>
  t === EventType.RECEIVED ? undefined : ((TYPES as Partial<Record<number, string>>)[t] as EventTypeName | '' | undefined) || undefined;
/** '' also for a value this build does not know. */
export const eventCauseName = (c: EventCause): EventCauseName => (CAUSES as Partial<Record<number, EventCauseName>>)[c] ?? '';
export const eventSourceName = (s: EventSource): EventSourceName => (SOURCES as Partial<Record<number, EventSourceName>>)[s] ?? '';

export const eventTypeOf = (name: EventTypeName | 'received'): EventType => TYPE_OF.get(name) ?? EventType.UNSPECIFIED;
export const eventCauseOf = (name: string): EventCause => CAUSE_OF.get(name) ?? EventCause.UNSPECIFIED;
export const eventSourceOf = (name: string): EventSource => SOURCE_OF.get(name) ?? EventSource.UNSPECIFIED;
