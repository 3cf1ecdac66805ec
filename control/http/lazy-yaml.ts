// @fastify/swagger and swagger-ui load the yaml package as they load (0.85 MB of control's heap,
// which the old generation's growth step doubles at peak), for the YAML form of the OpenAPI
// document only: it is loaded when that is first asked for. Imported before them (control/app.ts).
import { createRequire } from 'node:module';
import { deferModule } from '../../core/lazy-module.js';

deferModule(createRequire(import.meta.url).resolve('@fastify/swagger/lib/spec/openapi/index.js'), 'yaml');
