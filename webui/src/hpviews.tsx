import { useRef, useState } from "preact/hooks";
import { Trial } from "./api";
import { fitLabel, logTicks, ticks, wantsLog } from "./chartdata";
import { formatNumber } from "./formatting";
import { HeatMap } from "./heatmap";

// Parallel coordinates as SVG: one vertical axis per numeric hyperparameter plus the metric.
// A brush is a value range on an axis: drag along the axis, or type its bounds (keyboard users,
// and an exact range); trials outside any brush are dimmed. The scatter plots any of them
// against the metric. The counts in the status line are the views' text alternative.
export function HpViews(props: { trials: Trial[]; names: string[]; metric: string }) {
  const varying = props.names.filter((n) =>
    new Set(props.trials.map((t) => JSON.stringify(t.hparams[n]))).size > 1);
  const numeric = props.names.filter((n) => props.trials.some((t) => typeof t.hparams[n] === "number"));
  const axes = [...numeric, "metric"];
  const value = (t: Trial, a: string) => (a === "metric" ? t.searcherMetricValue ?? NaN : Number(t.hparams[a]));
  const [brush, setBrush] = useState<Record<string, [number, number]>>({});
  const [scatterX, setScatterX] = useState<string>("");
  const start = useRef<{ axis: string; y: number } | null>(null);
  const W = 160, H = 260, PAD = 20;
  const range = (a: string) => {
    const vs = props.trials.map((t) => value(t, a)).filter(Number.isFinite);
    if (!vs.length) return [0, 1];
    const lo = Math.min(...vs), hi = Math.max(...vs);
    return [lo, hi === lo ? lo + 1 : hi];
  };
  const ranges = Object.fromEntries(axes.map((a) => [a, range(a)]));
  const y = (a: string, v: number) => PAD + (H - 2 * PAD) * (1 - (v - ranges[a][0]) / (ranges[a][1] - ranges[a][0]));
  const valueAt = (a: string, py: number) =>
    ranges[a][0] + (1 - (py - PAD) / (H - 2 * PAD)) * (ranges[a][1] - ranges[a][0]);
  const inBrush = (t: Trial) => Object.entries(brush).every(([a, [lo, hi]]) => {
    const v = value(t, a); return v >= lo && v <= hi; });
  const kept = props.trials.filter(inBrush);
  const setBound = (a: string, k: 0 | 1, text: string) => {
    const next = { ...brush };
    const cur: [number, number] = next[a] ? [...next[a]] as [number, number] : [ranges[a][0], ranges[a][1]];
    const v = Number(text);
    if (text.trim() === "" || !Number.isFinite(v)) return;
    cur[k] = v;
    next[a] = cur;
    setBrush(next);
  };
  const sx = scatterX && numeric.includes(scatterX) ? scatterX : numeric[0];
  (window as any).__parcoords = { axes, brush, kept: kept.map((t) => t.id) };
  return (
    <div>
      <h2>Parallel coordinates</h2>
      <p role="status" id="brush-status">{kept.length} of {props.trials.length} trials in the brushes</p>
      <div class="scroll-x">
        <svg width={W * axes.length} height={H} role="img" aria-label={`Parallel coordinates of ${props.trials.length} trials over ${axes.join(", ")}; ${kept.length} inside the brushes`}>
          {props.trials.map((t) => (
            <polyline fill="none" stroke={inBrush(t) ? "#1f77b4" : "#ccc"} stroke-width="1" data-trial={t.id}
              points={axes.map((a, i) => `${i * W + W / 2},${y(a, value(t, a))}`).join(" ")} />))}
          {axes.map((a, i) => (
            <g>
              <line x1={i * W + W / 2} x2={i * W + W / 2} y1={PAD} y2={H - PAD} stroke="currentColor" />
              {/* Each axis's bounds, so a line's height reads as a value. */}
              <text x={i * W + W / 2 + 6} y={PAD + 4} font-size="11" fill="currentColor">{formatNumber(ranges[a][1])}</text>
              <text x={i * W + W / 2 + 6} y={H - PAD + 4} font-size="11" fill="currentColor">{formatNumber(ranges[a][0])}</text>
              {brush[a] && <rect x={i * W + W / 2 - 8} width="16" fill="#1f77b4" fill-opacity="0.2"
                y={y(a, brush[a][1])} height={Math.max(1, y(a, brush[a][0]) - y(a, brush[a][1]))} />}
              <rect x={i * W + W / 2 - 10} y={PAD} width="20" height={H - 2 * PAD} fill="transparent"
                data-axis={a}
                onMouseDown={(e) => (start.current = { axis: a, y: (e as MouseEvent).offsetY })}
                onMouseUp={(e) => { const s = start.current; if (!s || s.axis !== a) return;
                  const y2 = (e as MouseEvent).offsetY;
                  const lo = valueAt(a, Math.max(s.y, y2)), hi = valueAt(a, Math.min(s.y, y2));
                  setBrush({ ...brush, [a]: [lo, hi] }); start.current = null; }} />
              <text x={i * W + W / 2} y={12} text-anchor="middle" fill="currentColor">
                <title>{a}</title>{fitLabel(a, 20)}</text>
            </g>))}
        </svg>
      </div>
      <fieldset class="brushes"><legend>Brushes (value ranges)</legend>
        {axes.map((a) => (
          <span class="brush">
            <label>{a} from <input type="number" step="any" name={`brush-${a}-lo`}
              value={brush[a]?.[0] ?? ""} placeholder={String(ranges[a][0])}
              onChange={(e) => setBound(a, 0, (e.target as HTMLInputElement).value)} /></label>
            <label> to <input type="number" step="any" name={`brush-${a}-hi`}
              value={brush[a]?.[1] ?? ""} placeholder={String(ranges[a][1])}
              onChange={(e) => setBound(a, 1, (e.target as HTMLInputElement).value)} /></label>
          </span>))}
        <button type="button" onClick={() => setBrush({})}>Clear brushes</button>
      </fieldset>
      {sx && (
        <>
          <h2>Scatter: {sx} against the metric</h2>
          <label>Horizontal axis{" "}
            <select id="scatter-x" value={sx} onChange={(e) => setScatterX((e.target as HTMLSelectElement).value)}>
              {numeric.map((n) => <option value={n}>{n}</option>)}
            </select>
          </label>
          {/* A block of its own: inline, the tall plot would share a line with the picker. */}
          <div class="scroll-x">
            <Scatter trials={props.trials} xName={sx} metric={props.metric} dim={(t) => !inBrush(t)} />
          </div>
        </>
      )}
      <HeatMap trials={props.trials} names={varying} metric={props.metric} />
    </div>
  );
}

// The scatter with both axes drawn: ticks, values and the axis names; a hyperparameter spread
// over two or more decades (a learning rate) gets a log axis, said in its name.
function Scatter(props: { trials: Trial[]; xName: string; metric: string; dim: (t: Trial) => boolean }) {
  const W = 520, H = 300, L = 70, R = 16, T = 12, B = 48;
  const pts = props.trials
    .map((t) => ({ t, x: Number(t.hparams[props.xName]), y: t.searcherMetricValue ?? NaN }))
    .filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y));
  const logX = wantsLog(pts.map((p) => p.x));
  const span = (vs: number[], log: boolean): [number, number] => {
    if (!vs.length) return [0, 1];
    let lo = Math.min(...vs), hi = Math.max(...vs);
    if (lo === hi) return log ? [lo / 10, hi * 10] : [lo - (Math.abs(lo) || 1) * 0.5, hi + (Math.abs(hi) || 1) * 0.5];
    if (log) return [lo / 1.5, hi * 1.5];
    const pad = (hi - lo) * 0.05;
    lo -= pad; hi += pad;
    return [lo, hi];
  };
  const [x0, x1] = span(pts.map((p) => p.x), logX);
  const [y0, y1] = span(pts.map((p) => p.y), false);
  const f = (v: number) => (logX ? Math.log10(v) : v);
  const px = (v: number) => L + (W - L - R) * ((f(v) - f(x0)) / (f(x1) - f(x0)));
  const py = (v: number) => T + (H - T - B) * (1 - (v - y0) / (y1 - y0));
  const xt = logX ? logTicks(x0, x1) : ticks(x0, x1, 5);
  const yt = ticks(y0, y1, 5);
  const xTitle = `${props.xName}${logX ? " (log scale)" : ""}`;
  (window as any).__scatter = { x: props.xName, logX, xTicks: xt, yTicks: yt, xTitle, yTitle: props.metric, points: pts.length };
  return (
    <svg width={W} height={H} role="img" id="scatter"
      aria-label={`Scatter of ${props.metric} against ${xTitle}, ${pts.length} trials`}>
      <line x1={L} x2={W - R} y1={H - B} y2={H - B} stroke="currentColor" />
      <line x1={L} x2={L} y1={T} y2={H - B} stroke="currentColor" />
      {xt.map((v) => (
        <g class="tick-x">
          <line x1={px(v)} x2={px(v)} y1={H - B} y2={H - B + 5} stroke="currentColor" />
          <text x={px(v)} y={H - B + 17} text-anchor="middle" font-size="11" fill="currentColor">{formatNumber(v)}</text>
        </g>))}
      {yt.map((v) => (
        <g class="tick-y">
          <line x1={L - 5} x2={L} y1={py(v)} y2={py(v)} stroke="currentColor" />
          <text x={L - 8} y={py(v) + 4} text-anchor="end" font-size="11" fill="currentColor">{formatNumber(v)}</text>
        </g>))}
      <text x={(L + W - R) / 2} y={H - 8} text-anchor="middle" font-size="12" fill="currentColor" class="axis-title">{xTitle}</text>
      <text x={14} y={(T + H - B) / 2} text-anchor="middle" font-size="12" fill="currentColor" class="axis-title"
        transform={`rotate(-90 14 ${(T + H - B) / 2})`}>{fitLabel(props.metric, 30)}</text>
      {pts.map((p) => (
        <circle cx={px(p.x)} cy={py(p.y)} r="3.5" fill={props.dim(p.t) ? "#bbb" : "#d62728"}>
          <title>{`trial ${p.t.id}: ${props.xName}=${formatNumber(p.x)}, ${props.metric}=${formatNumber(p.y)}`}</title>
        </circle>))}
    </svg>
  );
}
