import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useGatewayRuntime } from '../helpers/gateway-runtime.js';
import type { DeliveredParams, HarakaPlugin, HMailItem } from '../../gateway/haraka.js';
import { PLUGINS } from '../../gateway/haraka-dir.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const g = useGatewayRuntime('postgate-delivered-');

const hmail = (emailId: string, file: string) =>
  ({
    filename: file,
    num_failures: 0,
    notes: {},
    todo: {
      uuid: `uuid-${emailId}`,
      domain: 'inbox.test',
      queue_time: Date.now(),
      mail_from: { address: 'b@acme.test' },
      rcpt_to: [{ address: 'ann@inbox.test' }],
      notes: { email_id: emailId },
    },
  }) as unknown as HMailItem;

const params = (h: HMailItem): DeliveredParams => ['mx.inbox.test', '127.0.0.1', '250 2.0.0 Ok: queued', 0.1, 25, 'SMTP', h.todo.rcpt_to, false, false];

describe('a delivery is recorded first', () => {
  it('the delivered hook has committed the sent event and the finished file when it returns', async () => {
    const h = hmail('em-first', 'file-first');
    let answered = false;
    g.hooks.delivered(() => (answered = true), h, params(h));
    // Read at once, before this turn of the event loop ends (the statements run synchronously).
    const [events, files] = await Promise.all([g.rt.outbox.eventsAfter(0, 10), g.rt.outbox.finishedFiles()]);
    expect(events).toEqual([expect.objectContaining({ emailId: 'em-first', type: 'sent', recipient: 'ann@inbox.test' })]);
    expect(files).toEqual(['file-first']);
    // Haraka deletes the queue file only once the commit is fsynced: the hook answers after that.
    expect(answered).toBe(false);
    await expect.poll(() => answered).toBe(true);
  });

  it("postgate_events' delivered hook runs before every other plugin's", async () => {
    // As Haraka orders a hook's plugins: by priority, then in config/plugins order.
    const registered: Array<{ plugin: string; priority: number; order: number }> = [];
    for (const [order, name] of PLUGINS.entries()) {
      const plugin = (await import(/* @vite-ignore */ pathToFileURL(path.join(root, 'plugins', name, 'index.ts')).href)) as {
        register(this: HarakaPlugin): void;
      };
      const self = {
        register_hook: (hook: string, _method: string, priority?: number) => {
          if (hook === 'delivered') registered.push({ plugin: name, priority: priority ?? 0, order });
        },
      } as unknown as HarakaPlugin;
      plugin.register.call(self);
    }
    registered.sort((a, b) => a.priority - b.priority || a.order - b.order);
    expect(registered.map((r) => r.plugin)).toEqual(['postgate_events', 'postgate_pacing']);
  });
});
