// Run in a process of its own by test/control/smtp/lazy-deps.test.ts: loads what control loads
// (control/app.ts, the SMTP door), reads messages the way the SMTP door does, and prints as JSON
// which of the deferred packages were compiled at each step and what was parsed.
import Module, { createRequire } from 'node:module';

const watched = /\/node_modules\/(he|linkify-it|html-to-text|encoding-japanese|yaml)\//;
const compiled = new Set<string>();
const proto = Module.prototype as unknown as { _compile(content: string, file: string): unknown };
const compile = proto._compile;
proto._compile = function (content: string, file: string) {
  const m = watched.exec(file);
  if (m) compiled.add(m[1]!);
  return compile.call(this, content, file);
};
const seen = () => [...compiled].sort();

await import('../../control/app.js');
const { parseMessage: readMessage } = await import('../../control/smtp/message.js');
const loaded = seen();

const crlf = (s: string) => Buffer.from(s.replace(/\r?\n/g, '\r\n'));
const simple = await readMessage(
  crlf('From: "Zoë <&> Co" <ann@acme.test>\nTo: Bob 😀 <bob@inbox.test>, "O\'Neil" <o@inbox.test>\nSubject: Hi\n\nPlain text with example.com in it.\n'),
);
const afterSimple = seen();
// Multipart: mailparser's own stream parser, with the SMTP door's options.
const multipart = await readMessage(
  crlf(
    'From: "Zoë <&> Co" <ann@acme.test>\nTo: Bob 😀 <bob@inbox.test>\nSubject: Hi\nMIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=b\n\n--b\nContent-Type: text/plain\n\nSee example.com\n--b\nContent-Type: text/html\n\n<p>See <b>example.com</b></p>\n--b--\n',
  ),
);
const afterMultipart = seen();
// The YAML form of the OpenAPI document still works: the stand-in loads the real package.
const yamlText = (
  createRequire(createRequire(import.meta.url).resolve('@fastify/swagger/lib/spec/openapi/index.js'))('yaml') as { stringify(v: unknown): string }
).stringify({ a: [1] });

const fields = (m: any) => ({ from: m.from, to: m.to, text: m.text, html: m.html });
process.stdout.write(
  `${JSON.stringify({ loaded, afterSimple, afterMultipart, afterYaml: seen(), yamlText, simple: fields(simple), multipart: fields(multipart) })}\n`,
);
