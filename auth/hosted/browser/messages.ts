// The messages between the widget (iframe, postgate's origin) and the embed
// script (the app's page). Both sides name the other's origin when sending
// and check the sender's origin and window when receiving.
export const SOURCE = 'postgate';

export type FromWidget =
  | { source: typeof SOURCE; type: 'ready' }
  | { source: typeof SOURCE; type: 'resize'; height: number }
  /** Send the top window here: the provider (OAuth) or the app's callback with svc_code. */
  | { source: typeof SOURCE; type: 'navigate'; url: string }
  | { source: typeof SOURCE; type: 'lang'; lang: string }
  /** A magic link was sent (auth/magic-links): keep this tab's verifier for the tab the email opens. */
  | { source: typeof SOURCE; type: 'magic-link-sent' };

export type ToWidget = { source: typeof SOURCE; type: 'lang'; lang: string };

export const isOurs = (data: unknown): data is { source: string; type: string } =>
  typeof data === 'object' && data !== null && (data as { source?: unknown }).source === SOURCE && typeof (data as { type?: unknown }).type === 'string';
