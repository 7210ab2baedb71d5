import { useEffect, useState } from "preact/hooks";
import { api, ApiError } from "./api";
import { submitted } from "./forms";
import { navigate } from "./router";

// The admin page's audit log (GET /api/v1/master/audit): who changed users, groups, roles, pools
// and other users' objects, newest first. Its filters and page live in the URL (/det/admin/audit
// ?actor=…&action=…&since=…&offset=…), so a view can be linked and Back returns to it. Only
// admins (and, under RBAC, ClusterAdmins) may read it: the master says so with a 403, and the
// page says so in words.

const PAGE = 50;

type Entry = {
  id: number;
  time: string;
  actor: string;
  action: string;
  path: string;
  targets: Record<string, unknown>;
  outcome: string;
  status: number;
  clientAddress?: string | null;
};

type Page = { entries: Entry[]; pagination: { total: number; startIndex: number; endIndex: number } };

// datetime-local gives a local time without a zone; the master wants RFC 3339 with one.
const toUtc = (local: string) => (local ? new Date(local).toISOString() : "");
const toLocal = (utc: string) => {
  if (!utc) return "";
  const d = new Date(utc);
  if (Number.isNaN(d.getTime())) return "";
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
};

function targets(t: Record<string, unknown>): string {
  return Object.entries(t || {}).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(", ");
}

export function AuditLog(props: { query: URLSearchParams }) {
  const actor = props.query.get("actor") || "";
  const action = props.query.get("action") || "";
  const since = props.query.get("since") || "";
  const offset = Math.max(0, Number(props.query.get("offset")) || 0);
  const [page, setPage] = useState<Page | null>(null);
  const [error, setError] = useState<{ status: number; message: string } | null>(null);

  useEffect(() => {
    const q = new URLSearchParams({ limit: String(PAGE), offset: String(offset) });
    if (actor) q.set("actor", actor);
    if (action) q.set("action", action);
    if (since) q.set("since", since);
    setError(null);
    api<Page>(`/api/v1/master/audit?${q}`).then(setPage, (e: ApiError) => {
      setPage(null);
      setError({ status: e.status, message: e.message });
    });
  }, [actor, action, since, offset]);

  const go = (changes: Record<string, string | number>) => {
    const q = new URLSearchParams({ actor, action, since, offset: String(offset) });
    Object.entries(changes).forEach(([k, v]) => q.set(k, String(v)));
    [...q.keys()].forEach((k) => { if (!q.get(k) || (k === "offset" && q.get(k) === "0")) q.delete(k); });
    const rest = q.toString();
    navigate(`/admin/audit${rest ? `?${rest}` : ""}`);
  };

  if (error?.status === 403) {
    return (
      <section aria-labelledby="audit-title">
        <h1 id="audit-title">Audit log</h1>
        <p role="alert" class="error">Admins only: only an admin may read the audit log.</p>
      </section>
    );
  }
  const total = page?.pagination.total ?? 0;
  const shown = page?.entries.length ?? 0;
  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit log</h1>
      <form class="toolbar" aria-label="Filter the audit log" onSubmit={(e) => {
        const field = submitted(e);
        go({ actor: field("actor").trim(), action: field("action").trim(), since: toUtc(field("since")), offset: 0 });
      }}>
        <label>Actor <input name="actor" defaultValue={actor} key={`a${actor}`} size={14} /></label>
        <label>Action <input name="action" defaultValue={action} key={`c${action}`} size={30}
          placeholder="POST /api/v1/users" /></label>
        <label>Since <input name="since" type="datetime-local" defaultValue={toLocal(since)} key={`s${since}`} /></label>
        <button type="submit">Filter</button>
        <button type="button" onClick={() => go({ actor: "", action: "", since: "", offset: 0 })}>Clear</button>
      </form>
      {error && <p role="alert" class="error">{error.message}</p>}
      {page && (
        <>
          <p role="status" id="audit-count">
            {total === 0 ? "No entries." : `Entries ${offset + 1}–${offset + shown} of ${total}`}</p>
          <table>
            <caption>Audit entries, newest first</caption>
            <thead><tr><th scope="col">Time</th><th scope="col">Actor</th><th scope="col">Action</th>
              <th scope="col">Targets</th><th scope="col">Outcome</th><th scope="col">Status</th>
              <th scope="col">Address</th></tr></thead>
            <tbody>
              {page.entries.map((e) => (
                <tr data-audit-id={e.id}>
                  <td><time dateTime={e.time}>{new Date(e.time).toLocaleString()}</time></td>
                  <td>{e.actor}</td><td><code>{e.action}</code><br /><span class="muted">{e.path}</span></td>
                  <td>{targets(e.targets)}</td><td>{e.outcome}</td><td>{e.status}</td>
                  <td>{e.clientAddress || ""}</td>
                </tr>))}
            </tbody>
          </table>
          <nav class="toolbar" aria-label="Audit log pages">
            <button type="button" disabled={offset === 0} onClick={() => go({ offset: Math.max(0, offset - PAGE) })}>
              Newer</button>
            <button type="button" disabled={offset + shown >= total} onClick={() => go({ offset: offset + PAGE })}>
              Older</button>
          </nav>
        </>
      )}
    </section>
  );
}
