// Caches that must drop an entry at once (API keys, sessions) listen here.
// In one process this is an EventEmitter; several control instances would put
// a Redis pub/sub behind the same two calls.
import { EventEmitter } from 'node:events';

export interface Invalidator {
  publish(channel: string, key: string): void;
  subscribe(channel: string, fn: (key: string) => void): void;
}

export function localInvalidator(): Invalidator {
  const bus = new EventEmitter();
  bus.setMaxListeners(0);
  return {
    publish: (channel, key) => void bus.emit(channel, key),
    subscribe: (channel, fn) => void bus.on(channel, fn),
  };
}
