import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { logOut, whoAmI } from "./api";
import { ExperimentList } from "./experiments";
import { Compare } from "./compare";
import { AuditLog } from "./admin";
import { Cluster, ExperimentDetail, Login, Tasks, TrialDetail } from "./pages";
import { Link, navigate, useLocation } from "./router";
import "./style.css";

const THEME = "resolute.theme";

const ids = (raw: string | null) => (raw || "").split(",").map(Number).filter((n) => Number.isInteger(n) && n > 0);

function App() {
  const { path, query } = useLocation();
  // null until the master says whether the session cookie (HttpOnly: not ours to read) is valid.
  const [authed, setAuthed] = useState<boolean | null>(null);
  useEffect(() => {
    whoAmI().then((user) => setAuthed(user !== null), () => setAuthed(false));
  }, []);
  // Whether to offer the admin page (the master still decides who may read it).
  const [admin, setAdmin] = useState(false);
  useEffect(() => {
    if (authed) whoAmI().then((user) => setAdmin(Boolean(user?.admin)), () => setAdmin(false));
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
  useEffect(() => {
    if (authed && (path === "/" || path === "/login")) {
      navigate(query.get("redirect") || "/projects/1/experiments", true);
    }
  }, [authed, path]);
  if (authed === null) {
    return <main id="main"><p>Loading…</p></main>;
  }
  if (!authed) {
    return <main id="main"><Login onLogin={() => setAuthed(true)} /></main>;
  }
  let page;
  let m;
  if ((m = path.match(/^\/projects\/(\d+)\/experiments\/?$/))) page = <ExperimentList projectId={Number(m[1])} />;
  else if ((m = path.match(/^\/experiments\/(\d+)\/trials\/(\d+)\/?$/)))
    page = <TrialDetail experimentId={Number(m[1])} id={Number(m[2])} />;
  else if ((m = path.match(/^\/experiments\/(\d+)\/?$/))) page = <ExperimentDetail id={Number(m[1])} />;
  else if (path.startsWith("/compare"))
    page = <Compare trials={ids(query.get("trials"))} experiments={ids(query.get("experiments"))} />;
  else if (path.startsWith("/clusters") || path.startsWith("/jobs")) page = <Cluster />;
  else if (path.startsWith("/tasks")) page = <Tasks />;
  else if (path.startsWith("/admin")) page = <AuditLog query={query} />;
  else page = <p>Loading…</p>;
  const nav: [string, string][] = [["/projects/1/experiments", "Experiments"], ["/clusters", "Cluster and queue"],
    ["/tasks", "Tasks"]];
  if (admin) nav.push(["/admin/audit", "Admin"]);
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header>
        <nav aria-label="Main">
          <strong>Resolute</strong>
          {nav.map(([href, label]) => (
            <Link href={href} aria-current={path.startsWith(href) ? "page" : undefined}>{label}</Link>))}
        </nav>
        <div>
          <button type="button" onClick={() => setTheme(theme === "dark" ? "light" : "dark")}
            aria-pressed={theme === "dark"}>Dark theme</button>
          <button type="button" onClick={async () => { await logOut(); setAuthed(false); navigate("/login"); }}>
            Sign out</button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>{page}</main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
