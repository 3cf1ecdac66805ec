// Run by test/control/smtp/lazy-deps.test.ts in a process of its own, on the build (plain Node,
// as control runs: no TypeScript loader, which would load esbuild itself): loads what control
// loads (control/app.js, the sign-in widget's plugin, the SMTP door, what registering the docs
// requires), reads messages the way the SMTP door does, and prints as JSON which of the deferred
// packages were compiled at each step and what was read.
import Module, { createRequire } from 'node:module';
import path from 'node:path';

const dist = process.argv[2];
const watched = /\/node_modules\/(he|linkify-it|html-to-text|encoding-japanese|yaml|glob|esbuild)\//;
const compiled = new Set();
const compile = Module.prototype._compile;
Module.prototype._compile = function (content, file) {
  const m = watched.exec(file);
  if (m) compiled.add(m[1]);
  return compile.call(this, content, file);
};
const seen = () => [...compiled].sort();

await import(path.join(dist, 'control/app.js'));
const { assets } = await import(path.join(dist, 'auth/hosted/assets.js'));
const { parseMessage } = await import(path.join(dist, 'control/smtp/message.js'));
// What registering the API docs requires (swagger-ui's routes, with @fastify/static).
const fromApp = createRequire(path.join(dist, 'control/app.js'));
createRequire(fromApp.resolve('@fastify/swagger-ui'))('./lib/routes.js');
const loaded = seen();

const crlf = (s) => Buffer.from(s.replace(/\r?\n/g, '\r\n'));
const simple = await parseMessage(
  crlf('From: "Zoë <&> Co" <ann@acme.test>\nTo: Bob 😀 <bob@inbox.test>, "O\'Neil" <o@inbox.test>\nSubject: Hi\n\nPlain text with example.com in it.\n'),
);
const afterSimple = seen();
// Multipart: mailparser's own stream parser, with the SMTP door's options.
const multipart = await parseMessage(
  crlf(
    'From: "Zoë <&> Co" <ann@acme.test>\nTo: Bob 😀 <bob@inbox.test>\nSubject: Hi\nMIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=b\n\n--b\nContent-Type: text/plain\n\nSee example.com\n--b\nContent-Type: text/html\n\n<p>See <b>example.com</b></p>\n--b--\n',
  ),
);
const afterMultipart = seen();
// Asked for, each still works: the stand-ins load the real packages.
const yamlText = createRequire(fromApp.resolve('@fastify/swagger/lib/spec/openapi/index.js'))('yaml').stringify({ a: [1] });
const widget = (await assets()).widget.body.length;

const fields = (m) => ({ from: m.from, to: m.to, text: m.text, html: m.html });
process.stdout.write(
  `${JSON.stringify({ loaded, afterSimple, afterMultipart, afterUse: seen(), yamlText, widget, simple: fields(simple), multipart: fields(multipart) })}\n`,
);
