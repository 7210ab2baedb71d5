import { useEffect, useState } from "preact/hooks";

const BASE = "/det";

export function navigate(path: string, replace = false): void {
  const url = path.startsWith(BASE) ? path : BASE + path;
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  window.dispatchEvent(new Event("resolute-nav"));
}

export function useLocation(): { path: string; query: URLSearchParams } {
  const read = () => ({
    path: location.pathname.slice(BASE.length) || "/",
    query: new URLSearchParams(location.search),
  });
  const [loc, setLoc] = useState(read);
  useEffect(() => {
    const update = () => setLoc(read());
    window.addEventListener("popstate", update);
    window.addEventListener("resolute-nav", update);
    return () => {
      window.removeEventListener("popstate", update);
      window.removeEventListener("resolute-nav", update);
    };
  }, []);
  return loc;
}

export function Link(props: { href: string; children: any; class?: string; "aria-current"?: any }) {
  return (
    <a
      href={BASE + props.href}
      class={props.class}
      aria-current={props["aria-current"]}
      onClick={(e) => {
        if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(props.href);
      }}
    >
      {props.children}
    </a>
  );
}

// A route's path is Determined's pattern ("/experiments/:experimentId/trials/:trialId/:tab?"):
// `:name` matches one segment, a trailing `?` makes it optional. Segments are URL-decoded, so a
// model named "a b" is /models/a%20b and arrives as "a b".
export type Params = Record<string, string>;

export function compile(pattern: string): (path: string) => Params | null {
  const names: string[] = [];
  const source = pattern.split("/").filter(Boolean).map((seg) => {
    const m = seg.match(/^:(\w+)(\?)?$/);
    if (!m) return "/" + seg.replace(/[.*+?^${}()|[\]\\-]/g, "\\$&");
    names.push(m[1]);
    return m[2] ? "(?:/([^/]+))?" : "/([^/]+)";
  }).join("");
  const re = new RegExp(`^${source}/?$`);
  return (path) => {
    const m = path.match(re);
    if (!m) return null;
    const params: Params = {};
    names.forEach((n, i) => {
      if (m[i + 1] === undefined) return;
      try {
        params[n] = decodeURIComponent(m[i + 1]);
      } catch {
        params[n] = m[i + 1];
      }
    });
    return params;
  };
}
