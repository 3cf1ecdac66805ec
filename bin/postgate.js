#!/usr/bin/env node
// The admin CLI: loads the TypeScript sources through tsx.
import { register } from 'tsx/esm/api';

register();
await import('../control/cli/main.ts');
