// Receiving mail end to end on PostgreSQL (POSTGATE_TEST_DATABASE_URL; the suite: suite.ts).
import { receivingSuite } from './suite.js';

receivingSuite('postgres');
