import { api, Experiment } from "./api";
import { Link } from "./router";
import { usePoll } from "./poll";

// Determined's home page: the caller's recent experiments, the tasks running now, and how full
// the cluster is, each linking to its own page.
const TASKS: [string, string][] = [["notebooks", "Notebook"], ["tensorboards", "TensorBoard"],
  ["shells", "Shell"], ["commands", "Command"]];

export function Dashboard() {
  const [exps, expErr] = usePoll(() => api<{ experiments: Experiment[] }>(
    "/api/v1/experiments?limit=10&sortBy=SORT_BY_START_TIME&orderBy=ORDER_BY_DESC"), [], 10000);
  const [tasks] = usePoll(async () => {
    const lists = await Promise.all(TASKS.map(([path, kind]) => api<any>(`/api/v1/${path}`)
      .then((r) => (r[path] ?? []).map((t: any) => ({ ...t, kind, path })), () => [])));
    return lists.flat().filter((t: any) => t.state !== "STATE_TERMINATED");
  }, [], 10000);
  const [pools] = usePoll(() => api<{ resourcePools: any[] }>("/api/v1/resource-pools"), [], 10000);
  const used = (pools?.resourcePools ?? []).reduce((n, p) => n + (p.slotsUsed ?? 0), 0);
  const total = (pools?.resourcePools ?? []).reduce((n, p) => n + (p.slotsAvailable ?? 0), 0);
  return (
    <section aria-labelledby="dashboard-title">
      <h1 id="dashboard-title">Home</h1>
      <p id="cluster-summary">{pools ? `${used} of ${total} slots in use across ${pools.resourcePools.length} resource pools.` : "…"}{" "}
        <Link href="/clusters">Cluster</Link></p>
      <h2>Recent experiments</h2>
      {expErr && <p role="alert" class="error">{expErr}</p>}
      <table><caption class="sr-only">Recent experiments</caption>
        <thead><tr><th scope="col">Experiment</th><th scope="col">State</th><th scope="col">Owner</th>
          <th scope="col">Started</th></tr></thead>
        <tbody>{(exps?.experiments ?? []).map((e) => (
          <tr><td><Link href={`/experiments/${e.id}`}>{e.id}: {e.name}</Link></td>
            <td>{e.state.replace("STATE_", "")}</td><td>{e.username}</td>
            <td>{e.startTime ? new Date(e.startTime).toLocaleString() : ""}</td></tr>))}</tbody>
      </table>
      {exps && !exps.experiments.length && <p class="muted">No experiments yet.</p>}
      <h2>Running tasks</h2>
      <table><caption class="sr-only">Running tasks</caption>
        <thead><tr><th scope="col">Task</th><th scope="col">Type</th><th scope="col">State</th>
          <th scope="col">Owner</th></tr></thead>
        <tbody>{(tasks ?? []).map((t: any) => (
          <tr><td><Link href={`/${t.path}/${t.id}/logs`}>{t.description || t.id}</Link></td><td>{t.kind}</td>
            <td>{String(t.state ?? "").replace("STATE_", "")}</td><td>{t.username}</td></tr>))}</tbody>
      </table>
      {tasks && !tasks.length && <p class="muted">No task is running. <Link href="/tasks">Launch one</Link>.</p>}
    </section>
  );
}
