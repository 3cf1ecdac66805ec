// The live state's windows and answers survive a restart: saved in the outbox settings once a minute
// when they changed (and at shutdown), read back at start. Queue counts are not saved: the queue
// itself is counted again as Haraka loads it (gateway/state/haraka-queue.ts).
import type { Logger } from '../../core/log.js';
import type { Outbox } from '../outbox/outbox.js';
import type { QueueState } from './tracker.js';

export const WINDOWS_SETTING = 'delivery-windows';
const SAVE_EVERY_MS = 60_000;

/** Restores the saved windows, then saves them every minute they changed; answers the save for shutdown. */
export async function keepWindows(state: QueueState, outbox: Pick<Outbox, 'setting' | 'putSetting'>, log: Logger): Promise<() => Promise<void>> {
  state.restore(await outbox.setting(WINDOWS_SETTING));
  let saved = state.revision;
  const save = async () => {
    if (state.revision === saved) return;
    saved = state.revision;
    const json = state.save();
    if (json === undefined) return void log.warn('delivery state: the windows are too large to save; a restart starts them again');
    await outbox.putSetting(WINDOWS_SETTING, json).catch((err) => log.error({ err }, 'delivery state: could not save the windows'));
  };
  setInterval(() => void save(), SAVE_EVERY_MS).unref();
  return save;
}
