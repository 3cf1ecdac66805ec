// The contract between the CLI and its commands (control's and auth's): what a command
// gets (the parsed options, an admin API client, output helpers) and what it returns.
export class CliError extends Error {}

export interface CliContext {
  opts: Record<string, string | boolean>;
  positionals: string[];
  call(method: string, path: string, body?: unknown): Promise<any>;
  /** A required --option's value. */
  need(name: string): string;
  /** The --project slug, URL-encoded. */
  slug(): string;
  table(rows: Array<Record<string, unknown>>): string;
  /** Ends the command with a message for the operator (exit status 1). */
  fail(message: string): never;
}

export interface CliResult {
  data: unknown;
  text: string;
}

/** Commands by their two words, e.g. "project create". */
export type Commands = Record<string, { usage: string; run(ctx: CliContext): Promise<CliResult> }>;
