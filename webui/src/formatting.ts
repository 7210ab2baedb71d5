// How numbers, hyperparameters and column names read on screen. Pure functions: the charts, the
// hyperparameter tables and the experiment list's headers share them.

// Four significant digits reads as the value without the float noise of 0.1 + 0.2; very small or
// very large magnitudes switch to exponent notation (a learning rate of 1e-5, not 0.00001).
export function formatNumber(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Number.isInteger(n) && Math.abs(n) < 1e15) return String(n);
  const abs = Math.abs(n);
  if (abs !== 0 && (abs < 1e-3 || abs >= 1e6)) {
    const [mant, exp] = n.toExponential(3).split("e");
    return `${trimZeros(mant)}e${exp.replace("+", "")}`;
  }
  return trimZeros(n.toPrecision(4));
}

function trimZeros(s: string): string {
  return s.includes(".") ? s.replace(/\.?0+$/, "") : s;
}

// A hyperparameter or metric value: numbers formatted, strings bare, lists and maps as JSON with
// their numbers formatted.
export function formatValue(v: unknown): string {
  if (v === null || v === undefined) return "—";
  if (typeof v === "number") return formatNumber(v);
  if (typeof v === "string") return v;
  if (typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return `[${v.map(formatValue).join(", ")}]`;
  if (typeof v === "object") {
    return `{${Object.entries(v as Record<string, unknown>).map(([k, x]) => `${k}: ${formatValue(x)}`).join(", ")}}`;
  }
  return String(v);
}

// Nested hyperparameters (Determined allows maps of them) as dotted names, in name order.
export function flattenHparams(h: Record<string, unknown>, prefix = ""): [string, unknown][] {
  const out: [string, unknown][] = [];
  for (const k of Object.keys(h ?? {}).sort()) {
    const v = h[k];
    const name = prefix ? `${prefix}.${k}` : k;
    if (v && typeof v === "object" && !Array.isArray(v)) out.push(...flattenHparams(v as Record<string, unknown>, name));
    else out.push([name, v]);
  }
  return out;
}

// Determined's own headers for the experiment list's columns; others are humanized.
const HEADERS: Record<string, string> = {
  id: "ID",
  name: "Name",
  state: "State",
  user: "User",
  searcherType: "Searcher",
  numTrials: "Trials",
  startTime: "Start time",
  endTime: "End time",
  searcherMetricsVal: "Searcher metric value",
  searcherMetric: "Searcher metric",
  resourcePool: "Resource pool",
  forkedFrom: "Forked from",
  checkpointSize: "Checkpoint size",
  checkpointCount: "Checkpoints",
  progress: "Progress",
  description: "Description",
  tags: "Tags",
  duration: "Duration",
  externalExperimentId: "External experiment ID",
  externalTrialId: "External trial ID",
  projectId: "Project ID",
  archived: "Archived",
};

// "searcherType" -> "Searcher type", "total_batches" -> "Total batches". Hyperparameter and
// metric columns keep their column name ("hp.lr", "validation.loss"): the user's own names, and
// what the filter's Column field takes.
export function columnHeader(column: string, displayName?: string): string {
  if (column.startsWith("hp.") || column.startsWith("validation.")) return column;
  if (HEADERS[column]) return HEADERS[column];
  if (displayName) return displayName;
  return humanize(column);
}

export function humanize(name: string): string {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .replace(/[_\-]+/g, " ")
    .trim()
    .split(/\s+/)
    .map((w) => (/^[A-Z0-9]+$/.test(w) && w.length > 1 ? w : w.toLowerCase()));
  const text = words.join(" ");
  return text ? text[0].toUpperCase() + text.slice(1) : name;
}
