// Receiving mail end to end on SQLite (the suite: suite.ts).
import { receivingSuite } from './suite.js';

receivingSuite('sqlite');
