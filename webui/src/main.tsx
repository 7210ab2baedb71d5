import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { logOut, whoAmI } from "./api";
import { currentProject, NotFound, rememberProject } from "./layout";
import { Login } from "./pages";
import { Link, navigate, useLocation } from "./router";
import { resolve } from "./routes";
import { pinnedWorkspaces } from "./workspaces";
import "./style.css";
import "./layout.css";

const THEME = "resolute.theme";

// The caller's pinned workspaces for the pinned bar, reloaded when a page pins or unpins one.
function usePins(authed: boolean | null): { id: number; name: string }[] {
  const [pins, setPins] = useState<{ id: number; name: string }[]>([]);
  useEffect(() => {
    if (!authed) return;
    const update = () => pinnedWorkspaces().then(setPins, () => setPins([]));
    update();
    window.addEventListener("resolute-pins", update);
    return () => window.removeEventListener("resolute-pins", update);
  }, [authed]);
  return pins;
}

function App() {
  const { path, query } = useLocation();
  // null until the master says whether the session cookie (HttpOnly: not ours to read) is valid.
  const [authed, setAuthed] = useState<boolean | null>(null);
  // Whether to offer the admin pages (the master still decides who may read them).
  const [admin, setAdmin] = useState(false);
  useEffect(() => {
    whoAmI().then((user) => { setAuthed(user !== null); setAdmin(Boolean(user?.admin)); },
      () => setAuthed(false));
  }, [authed]);
  const [theme, setTheme] = useState(() => localStorage.getItem(THEME) ||
    (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"));
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
    localStorage.setItem(THEME, theme);
  }, [theme]);
  useEffect(() => {
    const out = () => setAuthed(false);
    window.addEventListener("resolute-logout", out);
    return () => window.removeEventListener("resolute-logout", out);
  }, []);
  const pins = usePins(authed);
  const found = resolve(path);
  useEffect(() => {
    if (path === "/logout") {
      // Determined's sign-out link: end the session, then the sign-in page.
      logOut().then(() => { setAuthed(false); navigate("/login", true); });
      return;
    }
    if (authed && (path === "/" || path === "/login")) {
      navigate(query.get("redirect") || `/projects/${currentProject()}/experiments`, true);
    } else if (authed && found?.route.redirect) {
      navigate(found.route.redirect(found.params), true);
    }
  }, [authed, path]);
  useEffect(() => {
    document.title = `${found?.route.title ?? (path === "/login" ? "Sign in" : "Page not found")} - Resolute`;
  }, [path]);
  if (authed === null || path === "/logout") {
    return <main id="main"><p>Loading…</p></main>;
  }
  if (!authed) {
    return <main id="main"><Login onLogin={() => setAuthed(true)} /></main>;
  }
  let page;
  if (found?.route.render) page = found.route.render(found.params, query);
  else if (found?.route.redirect || path === "/" || path === "/login") page = <p>Loading…</p>;
  else page = <NotFound path={path} />;
  // The header's Experiments link opens the project last shown (the switcher's or a link's).
  const shown = path.match(/^\/projects\/(\d{1,10})(\/|$)/);
  if (shown) rememberProject(Number(shown[1]));
  const project = currentProject();
  const nav: [string, string, string][] = [
    [`/projects/${project}/experiments`, "Experiments", "/projects"],
    ["/clusters", "Cluster and queue", "/cluster"],
    ["/tasks", "Tasks", "/tasks"],
    ["/dashboard", "Home", "/dashboard"],
    ["/workspaces", "Workspaces", "/workspaces"],
    ["/models", "Model registry", "/models"],
    ["/templates", "Templates", "/templates"],
    ["/webhooks", "Webhooks", "/webhooks"],
  ];
  if (admin) nav.push(["/admin/audit", "Admin", "/admin"]);
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header>
        <nav aria-label="Main">
          <strong>Resolute</strong>
          {nav.map(([href, label, prefix]) => (
            <Link href={href} aria-current={path.startsWith(prefix) ? "page" : undefined}>{label}</Link>))}
        </nav>
        <div class="header-end">
          <button type="button" onClick={() => setTheme(theme === "dark" ? "light" : "dark")}
            aria-pressed={theme === "dark"}>Dark theme</button>
          <button type="button" onClick={async () => { await logOut(); setAuthed(false); navigate("/login"); }}>
            Sign out</button>
        </div>
      </header>
      {pins.length > 0 && (
        <nav aria-label="Pinned workspaces" class="pins">
          <span class="muted">Pinned:</span>
          {pins.map((w) => <Link href={`/workspaces/${w.id}`}
            aria-current={path.startsWith(`/workspaces/${w.id}`) ? "page" : undefined}>{w.name}</Link>)}
        </nav>
      )}
      <main id="main" tabIndex={-1}>{page}</main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
