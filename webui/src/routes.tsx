import type { JSX } from "preact";
import { ClusterPage, ResourcePool } from "./clusterpages";
import { Compare } from "./compare";
import { Dashboard } from "./dashboard";
import { ExperimentList } from "./experiments";
import { Breadcrumbs, currentProject, placeCrumbs, ProjectSwitcher, usePlace } from "./layout";
import { ModelDetail, ModelList, VersionDetail } from "./models";
import { ExperimentDetail } from "./pages";
import { compile, Params } from "./router";
import { TaskLogs, TasksPage } from "./tasks";
import { Templates } from "./templates";
import { TrialDetail } from "./trial";
import { Admin } from "./users";
import { Webhooks } from "./webhooks";
import { WorkspaceDetail, WorkspaceList } from "./workspaces";

// Every page's URL in one table, with Determined 0.38's paths (webui/react/src/routes/routes.ts)
// so its links (bookmarks, Slack, `det` output) open the same page here. The first match wins;
// a `redirect` replaces the URL (Determined's old paths). No match: the 404 page.
type Render = (p: Params, q: URLSearchParams) => JSX.Element;
export type RouteDef = { path: string; title: string; render?: Render; redirect?: (p: Params) => string };

const ids = (raw: string | null) => (raw || "").split(",").map(Number).filter((n) => Number.isInteger(n) && n > 0);
const num = (s: string) => Number(s);

function ProjectPage(props: { id: number }) {
  const place = usePlace(props.id);
  return (
    <div>
      <div class="toolbar"><Breadcrumbs crumbs={placeCrumbs(place)} /><ProjectSwitcher current={props.id} /></div>
      <ExperimentList projectId={props.id} />
    </div>
  );
}

function ExperimentPage(props: { id: number; tab?: string }) {
  const place = usePlace(undefined, props.id);
  return (
    <div>
      <Breadcrumbs crumbs={[...placeCrumbs(place), [`Experiment ${props.id}`]]} />
      <ExperimentDetail id={props.id} tab={props.tab} key={props.id} />
    </div>
  );
}

export const ROUTES: RouteDef[] = [
  { path: "/dashboard", title: "Home", render: () => <Dashboard /> },
  { path: "/workspaces", title: "Workspaces", render: () => <WorkspaceList /> },
  { path: "/workspaces/:workspaceId/:tab?", title: "Workspace",
    render: (p) => <WorkspaceDetail id={num(p.workspaceId)} tab={p.tab} key={p.workspaceId} /> },
  { path: "/projects/:projectId/:tab?", title: "Project",
    render: (p) => <ProjectPage id={num(p.projectId)} key={p.projectId} /> },
  { path: "/experiments", title: "Experiments", redirect: () => `/projects/${currentProject()}/experiments` },
  { path: "/experiments/:experimentId/trials/:trialId/:tab?", title: "Trial",
    render: (p) => <TrialDetail experimentId={num(p.experimentId)} id={num(p.trialId)} tab={p.tab} key={p.trialId} /> },
  { path: "/trials/:trialId/:tab?", title: "Trial",
    render: (p) => <TrialDetail id={num(p.trialId)} tab={p.tab} key={p.trialId} /> },
  { path: "/experiments/:experimentId/:tab?/:viz?", title: "Experiment",
    render: (p) => <ExperimentPage id={num(p.experimentId)} tab={p.tab} key={p.experimentId} /> },
  { path: "/searches/:searchId/:tab?", title: "Search",
    render: (p) => <ExperimentPage id={num(p.searchId)} tab={p.tab} key={p.searchId} /> },
  { path: "/compare", title: "Compare",
    render: (_, q) => <Compare trials={ids(q.get("trials"))} experiments={ids(q.get("experiments"))} /> },
  { path: "/experiment-compare", title: "Compare",
    render: (_, q) => <Compare trials={[]} experiments={ids(q.get("id") ?? q.get("experiments"))} /> },
  { path: "/models", title: "Model registry", render: () => <ModelList /> },
  { path: "/models/:modelId", title: "Model", render: (p) => <ModelDetail model={p.modelId} key={p.modelId} /> },
  { path: "/models/:modelId/versions/:versionId/:tab?", title: "Model version",
    render: (p) => <VersionDetail model={p.modelId} version={num(p.versionId)} /> },
  { path: "/tasks", title: "Tasks", render: () => <TasksPage /> },
  { path: "/:taskType/:taskId/logs", title: "Task logs",
    render: (p) => <TaskLogs type={p.taskType} id={p.taskId} key={p.taskId} /> },
  { path: "/jobs", title: "Job queue", render: () => <ClusterPage /> },
  { path: "/clusters/:tab?", title: "Cluster", render: (p) => <ClusterPage tab={p.tab} /> },
  { path: "/cluster/:tab?", title: "Cluster", redirect: (p) => (p.tab ? `/clusters/${p.tab}` : "/clusters") },
  { path: "/resourcepool/:poolname/:tab?", title: "Resource pool",
    render: (p) => <ResourcePool name={p.poolname} /> },
  { path: "/templates", title: "Templates", render: () => <Templates /> },
  { path: "/webhooks", title: "Webhooks", render: () => <Webhooks /> },
  { path: "/admin/:tab?", title: "Admin", render: (p, q) => <Admin tab={p.tab} query={q} /> },
];

const COMPILED = ROUTES.map((r) => ({ route: r, match: compile(r.path) }));

// Ids are whole numbers (/experiments/abc is no page); a model is named by id or by name, a
// task by its UUID.
const NUMERIC = new Set(["workspaceId", "projectId", "experimentId", "trialId", "searchId", "versionId"]);
// Determined's task types in /:taskType/:taskId/logs; another first segment is not a task.
const TASK_TYPES = new Set(["commands", "notebooks", "shells", "tensorboards", "tasks"]);

function valid(params: Params): boolean {
  if (params.taskType !== undefined && !TASK_TYPES.has(params.taskType)) return false;
  return Object.entries(params).every(([k, v]) => !NUMERIC.has(k) || (/^\d{1,10}$/.test(v) && Number(v) > 0 && Number(v) < 2 ** 31));
}

// The route a path opens and its parameters; null: no page there (the 404 page).
export function resolve(path: string): { route: RouteDef; params: Params } | null {
  for (const { route, match } of COMPILED) {
    const params = match(path);
    if (params && valid(params)) return { route, params };
  }
  return null;
}
