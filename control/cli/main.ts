// `postgate <command>`: the operator's CLI. Its composition root: the one place that
// knows which areas bring commands (auth's come from the auth capability's own export).
import { runCli } from './run.js';
import type { Commands } from '../../core/cli-commands.js';
import { coreCommands } from './core-commands.js';
import { pacingCommands } from '../pacing/cli.js';
import { authCommands } from '../../auth/cli.js';

const commands: Commands = { ...coreCommands, ...authCommands(), ...pacingCommands };
await runCli(commands);
