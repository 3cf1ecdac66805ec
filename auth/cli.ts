// CLI commands of the auth area (providers, origins, session settings).
import type { Commands } from '../control/cli/context.js';

export const authCommands: Commands = {};
