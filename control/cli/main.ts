// `postgate <command>`: the operator's CLI. Its composition root: the one place that
// knows which areas bring commands (auth's from createAuth(), as control/main.ts composes auth).
import { runCli } from './run.js';
import type { Commands } from '../../core/cli-commands.js';
import { coreCommands } from './core-commands.js';
import { pacingCommands } from '../pacing/cli.js';
import { queueControlCommands } from '../operations/cli.js';
import { queueStatusCommands } from '../operations/state-cli.js';
import { createAuth } from '../../auth/plugin.js';

const commands: Commands = { ...coreCommands, ...createAuth().commands, ...pacingCommands, ...queueControlCommands, ...queueStatusCommands };
await runCli(commands);
