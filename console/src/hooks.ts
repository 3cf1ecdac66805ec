import { type DependencyList, useCallback, useEffect, useRef, useState } from 'react';

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  reload: () => void;
}

/**
 * Loads with `fn` when `deps` change and, with `everyMs`, again every so often while the tab is
 * visible (a hidden tab does not poll; it loads at once when shown again). A failed refresh keeps the
 * last data and shows the error.
 */
export function usePoll<T>(fn: () => Promise<T>, deps: DependencyList, everyMs?: number): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<Error>();
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const fnRef = useRef(fn);
  fnRef.current = fn;
  const reload = useCallback(() => setTick((t) => t + 1), []);

  // Other arguments (another project, another search): the last answer is not theirs.
  useEffect(() => {
    setData(undefined);
    setError(undefined);
  }, [...deps]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: deps are the caller's, tick forces a reload
  useEffect(() => {
    let live = true;
    setLoading(true);
    fnRef.current().then(
      (d) => {
        if (!live) return;
        setData(d);
        setError(undefined);
        setLoading(false);
      },
      (e: unknown) => {
        if (!live) return;
        setError(e instanceof Error ? e : new Error(String(e)));
        setLoading(false);
      },
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);

  useEffect(() => {
    if (!everyMs) return;
    let timer: number | undefined;
    const start = () => {
      window.clearInterval(timer);
      timer = document.visibilityState === 'visible' ? window.setInterval(reload, everyMs) : undefined;
    };
    const visibility = () => {
      if (document.visibilityState === 'visible') reload();
      start();
    };
    start();
    document.addEventListener('visibilitychange', visibility);
    return () => {
      window.clearInterval(timer);
      document.removeEventListener('visibilitychange', visibility);
    };
  }, [everyMs, reload]);

  return { data, error, loading, reload };
}

/** Runs a change (a POST or DELETE), keeping its error and whether it runs. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  const run = useCallback(async <T>(fn: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(undefined);
    try {
      return await fn();
    } catch (e) {
      setError(e instanceof Error ? e : new Error(String(e)));
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(undefined) };
}
