// The UI is one more client of /api/v1: a bearer token from login, kept in localStorage.
const TOKEN = "resolute.token";

export function token(): string | null {
  return localStorage.getItem(TOKEN);
}

export function setToken(value: string | null): void {
  if (value) {
    localStorage.setItem(TOKEN, value);
    // Determined's UI keeps the token in the `auth` cookie as well: the proxy of notebooks and
    // shells authenticates the browser with it.
    document.cookie = `auth=${value}; path=/; SameSite=Strict`;
  } else {
    localStorage.removeItem(TOKEN);
    document.cookie = "auth=; path=/; max-age=0";
  }
}

export class ApiError extends Error {
  constructor(public status: number, message: string) {
    super(message);
  }
}

export async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const headers = new Headers(init.headers);
  const t = token();
  if (t) headers.set("Authorization", `Bearer ${t}`);
  if (init.body) headers.set("Content-Type", "application/json");
  const r = await fetch(path, { ...init, headers });
  if (r.status === 401) {
    setToken(null);
    window.dispatchEvent(new Event("resolute-logout"));
  }
  if (!r.ok) {
    let message = r.statusText;
    try {
      const body = await r.json();
      message = body.message || body.error?.error || message;
    } catch {
      /* not JSON */
    }
    throw new ApiError(r.status, message);
  }
  return r.json() as Promise<T>;
}

export const post = <T>(path: string, body: unknown) =>
  api<T>(path, { method: "POST", body: JSON.stringify(body) });

// NDJSON follow streams (logs): calls `onLine` per `result` until the stream ends or `signal`.
export async function follow(
  path: string,
  onLine: (result: any) => void,
  signal: AbortSignal,
): Promise<void> {
  const headers = new Headers();
  const t = token();
  if (t) headers.set("Authorization", `Bearer ${t}`);
  const r = await fetch(path, { headers, signal });
  if (!r.ok || !r.body) throw new ApiError(r.status, r.statusText);
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.trim()) {
        const parsed = JSON.parse(line);
        if (parsed.result) onLine(parsed.result);
      }
    }
  }
}

export type Experiment = {
  id: number;
  name: string;
  state: string;
  username: string;
  labels: string[];
  searcherType: string;
  numTrials: number;
  progress?: number | null;
  startTime: string;
  endTime?: string | null;
  archived: boolean;
  config: any;
  projectId: number;
  description: string;
  resourcePool: string;
  searcherMetric?: string;
};

export type Trial = {
  id: number;
  experimentId: number;
  state: string;
  hparams: Record<string, any>;
  totalBatchesProcessed?: number;
  searcherMetricValue?: number | null;
  bestValidation?: any;
  latestValidation?: any;
  taskId: string;
  startTime: string;
  endTime?: string | null;
};

export type DataPoint = { batches: number; time: string; values: Record<string, number> };

export async function series(
  trialIds: number[],
  group: string,
  maxDatapoints: number,
  start?: number,
  end?: number,
): Promise<{ trial: Trial; metrics: { data: DataPoint[] }[] }[]> {
  const q = new URLSearchParams();
  trialIds.forEach((id) => q.append("trialIds", String(id)));
  q.set("group", group);
  q.set("maxDatapoints", String(maxDatapoints));
  if (start !== undefined) q.set("startBatches", String(Math.max(0, Math.floor(start))));
  if (end !== undefined) q.set("endBatches", String(Math.max(0, Math.ceil(end))));
  const r = await api<{ trials: any[] }>(`/api/v1/trials/time-series?${q}`);
  return r.trials;
}
