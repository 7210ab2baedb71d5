import { useEffect, useState } from "preact/hooks";

// Loads now and every `everyMs`, keeping the last answer on screen while the next one is fetched;
// a failure is shown (the second value) until a later load succeeds. `reload` loads at once (after
// a change the user made). Stops when the component goes or the dependencies change.
export function usePoll<T>(load: () => Promise<T>, deps: unknown[], everyMs = 5000):
  [T | null, string, () => void] {
  const [value, setValue] = useState<T | null>(null);
  const [error, setError] = useState("");
  const [version, setVersion] = useState(0);
  useEffect(() => {
    let stop = false;
    const tick = () => load().then((v) => { if (!stop) { setValue(v); setError(""); } })
      .catch((e) => { if (!stop) setError(String(e?.message ?? e)); });
    tick();
    const timer = everyMs > 0 ? setInterval(tick, everyMs) : undefined;
    return () => { stop = true; if (timer) clearInterval(timer); };
  }, [...deps, version]);
  return [value, error, () => setVersion((v) => v + 1)];
}
