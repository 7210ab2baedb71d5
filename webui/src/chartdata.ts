// What a metric chart draws, decided apart from drawing it: which lines, on which x, in which
// panel, which points get a marker, and the ranges when the data alone gives none.

export type XAxis = "batches" | "epochs" | "time";
export type Layout = "metric" | "shared";
export type Point = { batches: number; time: string; epoch?: number | null; values: Record<string, unknown> };
export type TrialPoints = { trialId: number; points: Point[] };
export type Line = { label: string; trialId: number; metric: string; x: number[]; y: (number | null)[] };
export type Panel = { key: string; title: string; yLabel: string; lines: Line[] };

export const X_LABELS: Record<XAxis, string> = { batches: "Batches", epochs: "Epochs", time: "Time" };

// `epoch` is reported beside the metrics by Determined's harness; it is an x, not a curve.
export function metricNames(trials: TrialPoints[]): string[] {
  const names = new Set<string>();
  for (const t of trials) for (const p of t.points) for (const n of Object.keys(p.values)) names.add(n);
  names.delete("epoch");
  return Array.from(names).sort();
}

export function epochOf(p: Point): number | null {
  if (typeof p.epoch === "number" && Number.isFinite(p.epoch)) return p.epoch;
  const v = p.values.epoch;
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

// Time is seconds since 1970, uPlot's unit for a time scale.
export function xOf(p: Point, axis: XAxis): number | null {
  if (axis === "batches") return p.batches;
  if (axis === "epochs") return epochOf(p);
  const t = Date.parse(p.time);
  return Number.isFinite(t) ? t / 1000 : null;
}

export function hasEpochs(trials: TrialPoints[]): boolean {
  return trials.some((t) => t.points.some((p) => epochOf(p) !== null));
}

// One line per trial and chosen metric, trial by trial then metric by name; a point without the
// chosen x (no epoch reported) is left out, a non-numeric value is a gap.
export function linesOf(trials: TrialPoints[], metrics: string[], axis: XAxis): Line[] {
  const chosen = [...metrics].sort();
  const out: Line[] = [];
  for (const t of trials) {
    const pts = t.points.filter((p) => xOf(p, axis) !== null);
    for (const m of chosen) {
      if (!t.points.some((p) => m in p.values)) continue;
      out.push({
        label: `trial ${t.trialId} ${m}`,
        trialId: t.trialId,
        metric: m,
        x: pts.map((p) => xOf(p, axis) as number),
        y: pts.map((p) => {
          const v = p.values[m];
          return typeof v === "number" && Number.isFinite(v) ? v : null;
        }),
      });
    }
  }
  return out;
}

// A small multiple per metric (each its own y-axis, so `batches` in the hundreds no longer
// flattens a loss below 1), or every line on one shared axis.
export function panelsOf(lines: Line[], layout: Layout, group: string): Panel[] {
  if (layout === "shared") {
    return lines.length ? [{ key: "all", title: `${group} metrics`, yLabel: "Value", lines }] : [];
  }
  const by = new Map<string, Line[]>();
  for (const l of lines) by.set(l.metric, [...(by.get(l.metric) ?? []), l]);
  return Array.from(by.keys()).sort().map((m) => ({ key: m, title: `${group}: ${m}`, yLabel: m, lines: by.get(m)! }));
}

// A log axis cannot place zero or a negative value: those become gaps, and are counted so the
// chart can say how many it left out.
export function forLog(y: (number | null)[]): { y: (number | null)[]; dropped: number } {
  let dropped = 0;
  const out = y.map((v) => {
    if (v !== null && v <= 0) {
      dropped += 1;
      return null;
    }
    return v;
  });
  return { y: out, dropped };
}

// Markers where a line alone would show nothing or little: every point of a sparse series (a
// validation run every epoch), none on a dense one, where the line is the reading.
export const MAX_MARKED = 60;
export function markerIndices(y: (number | null)[], max = MAX_MARKED): number[] {
  const idx: number[] = [];
  y.forEach((v, i) => v !== null && Number.isFinite(v) && idx.push(i));
  return idx.length <= max ? idx : [];
}

// The range of a scale whose data is one value (a single point): centred on it, so the point
// sits inside the plot rather than on an edge of a zero-width scale.
export function degenerateRange(v: number | null, log: boolean, time = false): [number, number] {
  if (v === null || !Number.isFinite(v)) return log ? [1, 10] : [0, 1];
  if (log) return v > 0 ? [v / 10, v * 10] : [1, 10];
  if (time) return [v - 60, v + 60];
  if (v === 0) return [-1, 1];
  const pad = Math.abs(v) * 0.5;
  return [v - pad, v + pad];
}

// Columns of small multiples: two side by side once each can be at least MIN_PANEL wide.
export const MIN_PANEL = 480;
export function panelWidth(available: number, panels: number, gap = 16): number {
  const cols = panels > 1 && available >= 2 * MIN_PANEL + gap ? 2 : 1;
  return Math.max(240, Math.floor((available - gap * (cols - 1)) / cols));
}

// Round tick values across [lo, hi] (1, 2 or 5 times a power of ten), for the SVG plots.
export function ticks(lo: number, hi: number, count = 5): number[] {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [];
  if (hi === lo) return [lo];
  const raw = (hi - lo) / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((f) => f * mag).find((s) => s >= raw)!;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    out.push(Number((Math.round(v / step) * step).toPrecision(15)));
  }
  return out;
}

// Powers of ten across [lo, hi] for a log axis (both positive).
export function logTicks(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    const v = Number((10 ** e).toPrecision(12));
    if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push(v);
  }
  return out;
}

// A log x for hyperparameters spread over two or more decades (learning rates), else linear.
export function wantsLog(values: number[]): boolean {
  const vs = values.filter(Number.isFinite);
  if (!vs.length || vs.some((v) => v <= 0)) return false;
  return Math.max(...vs) / Math.min(...vs) >= 100;
}

// A label cut to what fits in `max` characters, with an ellipsis (the full text is kept in a
// tooltip and in the table beside the plot).
export function fitLabel(label: string, max: number): string {
  if (label.length <= max) return label;
  return max <= 1 ? "…" : `${label.slice(0, max - 1)}…`;
}
