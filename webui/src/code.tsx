import { useEffect, useState } from "preact/hooks";
import { api } from "./api";

type File = { path: string; size: number; data: Uint8Array };

// The experiment's context is a .tar.gz (GET /experiments/{id}/model_def): gunzip with the
// browser's DecompressionStream, then read the ustar headers.
async function untar(b64: string): Promise<File[]> {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  const tar = new Uint8Array(await new Response(stream).arrayBuffer());
  const text = (a: Uint8Array) => new TextDecoder().decode(a).replace(/\0.*$/s, "");
  const files: File[] = [];
  for (let off = 0; off + 512 <= tar.length; ) {
    const header = tar.subarray(off, off + 512);
    const name = text(header.subarray(0, 100));
    if (!name) break;
    const size = parseInt(text(header.subarray(124, 136)).trim() || "0", 8);
    const prefix = text(header.subarray(345, 500));
    const type = String.fromCharCode(header[156] || 48);
    if (type === "0" || type === "\0") {
      const path = (prefix ? `${prefix}/` : "") + name;
      files.push({ path: path.replace(/^\.\//, ""), size, data: tar.subarray(off + 512, off + 512 + size) });
    }
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return files.sort((a, b) => a.path.localeCompare(b.path));
}

export function CodeView(props: { experimentId: number }) {
  const [files, setFiles] = useState<File[] | null>(null);
  const [open, setOpen] = useState<File | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    api<{ b64Tgz: string }>(`/api/v1/experiments/${props.experimentId}/model_def`)
      .then((r) => (r.b64Tgz ? untar(r.b64Tgz) : []))
      .then(setFiles)
      .catch((e) => setError(e.message));
  }, [props.experimentId]);
  if (error) return <p role="alert">{error}</p>;
  if (!files) return <p>Loading…</p>;
  if (!files.length) return <p>This experiment has no stored context directory.</p>;
  return (
    <div class="code">
      <ul aria-label="Context files">
        {files.map((f) => (
          <li><button type="button" aria-pressed={open === f} onClick={() => setOpen(f)}>
            {f.path}</button> <span class="muted">{f.size} B</span></li>
        ))}
      </ul>
      {open && (
        <pre tabIndex={0} aria-label={`Contents of ${open.path}`} role="region">
          {open.size > 1_000_000 ? "(over 1 MB: not shown)" : new TextDecoder().decode(open.data)}</pre>
      )}
    </div>
  );
}
