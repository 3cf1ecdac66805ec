// What the API documents' plugins load as they load and control rarely or never uses, loaded on
// first use instead (each costs heap that the old generation's growth step doubles at peak):
// yaml (0.85 MB), which @fastify/swagger and swagger-ui load for the document's YAML form only,
// and glob (0.46 MB), which @fastify/static (swagger-ui's files) uses only with `wildcard: false`.
// Imported before them (control/app.ts).
import { createRequire } from 'node:module';
import { deferModule } from '../../core/lazy-module.js';

const require = createRequire(import.meta.url);
deferModule(require.resolve('@fastify/swagger/lib/spec/openapi/index.js'), 'yaml');
deferModule(require.resolve('@fastify/static'), 'glob', ['glob']);
