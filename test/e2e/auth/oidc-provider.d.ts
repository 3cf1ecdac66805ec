// oidc-provider ships no types; the tests use a small part of it.
declare module 'oidc-provider' {
  export class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void;
    interactionDetails(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): Promise<any>;
    interactionFinished(
      req: import('node:http').IncomingMessage,
      res: import('node:http').ServerResponse,
      result: Record<string, unknown>,
      opts?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
    Grant: new (o: {
      accountId: string;
      clientId: string;
    }) => { addOIDCScope(s: string): void; addOIDCClaims(c: string[]): void; addResourceScope(r: string, s: string): void; save(): Promise<string> };
    on(event: string, fn: (...args: any[]) => void): void;
  }
  export default Provider;
}
