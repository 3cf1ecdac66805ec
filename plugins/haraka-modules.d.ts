// Haraka's helper packages ship no typings; these declare the parts the plugins use.
declare module 'haraka-constants' {
  const constants: {
    readonly cont: number;
    readonly ok: number;
    readonly deny: number;
    readonly denysoft: number;
    readonly delay: number;
  };
  export = constants;
}

declare module 'haraka-notes' {
  class Notes {
    constructor(init?: Record<string, unknown>);
    [key: string]: unknown;
  }
  export = Notes;
}
