// The version of the contract between control and its gateways (gateway.proto). Both
// processes import this one constant: control sends it with Enqueue and Events, and a
// gateway built from another commit refuses them (FAILED_PRECONDITION) instead of
// misreading what it is sent. Raise it with every change to gateway.proto that both
// sides must agree on (a field's meaning, a new enum value, a reserved field). Each
// Enqueue answer states the gateway's own: one built before this check states none,
// and control refuses its answer the same way.
// 2: attachments (Composition.attachments, EnqueueRequest.attachments): a gateway of 1 would send the mail without its files.
// 3: every call carries a MAC of POSTGATE_SECRET and every answer a proof (proto/rpc-auth.ts): a gateway of 2
//    answers anyone, and refuses this control's Enqueue and Events by their number instead.
// 4: operator controls (SetControls, SendNow), live state (DeliveryState), Metrics, the causes SHAPING and SUSPENDED,
//    DeliveryEvent.rule and OutboundMessage.accepted_ms: a gateway of 3 would deliver mail an operator canceled.
export const CONTRACT = 4;

const shown = (n: number) => (n ? String(n) : 'none (a build from before contract versions)');

/** The one line both sides log when control and a gateway disagree. */
export const mismatchText = (control: number, gateway: number): string =>
  `control speaks contract ${shown(control)}, this gateway ${shown(gateway)}: run control and its gateways from the same build`;

/** Why a gateway of this build refuses a call in contract `got`; undefined when they agree. */
export const contractMismatch = (got: number): string | undefined => (got === CONTRACT ? undefined : mismatchText(got, CONTRACT));
