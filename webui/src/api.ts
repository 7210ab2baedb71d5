// The UI is one more client of /api/v1, with one difference: its session is an HttpOnly `auth`
// cookie the master sets at login and clears at logout. No script (ours, or a proxied page's on
// this origin) can read it, and nothing of it is kept in localStorage, sessionStorage or a
// script-set cookie. Every request sends the CSRF header, which the master requires of writes
// the cookie authenticates (a page of another origin cannot send it).

// Earlier UIs kept the token in localStorage and in a script-set `auth` cookie, where any page of
// this origin could read it: drop both on load. (A script cannot delete the master's HttpOnly
// cookie of the same name, so this never ends the current session.)
try {
  localStorage.removeItem("resolute.token");
} catch {
  /* storage disabled */
}
document.cookie = "auth=; path=/; max-age=0; SameSite=Strict";

function request(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("X-Resolute-CSRF", "1");
  if (init.body) headers.set("Content-Type", "application/json");
  return fetch(path, { ...init, headers, credentials: "same-origin" });
}

export class ApiError extends Error {
  constructor(public status: number, message: string) {
    super(message);
  }
}

export async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const r = await request(path, init);
  if (r.status === 401) window.dispatchEvent(new Event("resolute-logout"));
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

export type User = { id?: number; username: string; admin: boolean; displayName?: string };

// Logged in: the cookie's session answers /api/v1/me (null when it does not, or has none).
export async function whoAmI(): Promise<User | null> {
  const r = await request("/api/v1/me");
  if (!r.ok) return null;
  return (await r.json()).user;
}

// The master checks the password and sets the cookie; the body carries only the user.
export async function logIn(username: string, password: string): Promise<User> {
  return (await post<{ user: User }>("/api/v1/auth/login", { username, password })).user;
}

// The master deletes the session and clears the cookie.
export async function logOut(): Promise<void> {
  await request("/api/v1/auth/logout", { method: "POST" }).catch(() => undefined);
}

// NDJSON follow streams (logs): calls `onLine` per `result` until the stream ends or `signal`.
export async function follow(
  path: string,
  onLine: (result: any) => void,
  signal: AbortSignal,
): Promise<void> {
  const r = await request(path, { signal });
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
