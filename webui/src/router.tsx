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
