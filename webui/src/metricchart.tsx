import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { series as fetchSeries } from "./api";
import { COLORS, describe, Plot, Series, smooth } from "./chart";
import {
  forLog, hasEpochs, Layout, linesOf, metricNames, panelsOf, panelWidth, TrialPoints, X_LABELS, XAxis,
} from "./chartdata";
import { submitted } from "./forms";

// Points asked of the server per series: three per pixel of a wide plot (min, max and last of
// each bucket), so a spike survives the reduction.
const MAX_POINTS = 2700;

type Loaded = { trials: TrialPoints[]; zoom: [number, number] | null; loaded: boolean };

// A trial's metric curves with the reader's choices: which metrics, a plot per metric or one
// shared axis, x by batches, epochs or time, log scale, smoothing, and a zoom by batch range
// (the server then sends every point in the window).
export function MetricChart(props: { id: string; trialIds: number[]; group: string; live?: boolean }) {
  // `loaded` stays false until the first answer, so the chart is not published empty.
  const [data, setData] = useState<Loaded>({ trials: [], zoom: null, loaded: false });
  const [log, setLog] = useState(false);
  const [weight, setWeight] = useState(0);
  const [axis, setAxis] = useState<XAxis>("batches");
  const [layout, setLayout] = useState<Layout>("metric");
  // Metrics the reader unticked; a metric that appears later (a live trial) is shown.
  const [hidden, setHidden] = useState<Set<string>>(new Set());
  const [window_, setWindow] = useState<[number, number] | null>(null);
  const [tick, setTick] = useState(0);
  const [width, setWidth] = useState(0);
  const box = useRef<HTMLDivElement>(null);
  const paints = useRef<Record<string, number>>({});

  useEffect(() => {
    if (!box.current) return;
    const measure = () => setWidth(Math.floor(box.current?.clientWidth ?? 0));
    measure();
    const watcher = new ResizeObserver(measure);
    watcher.observe(box.current);
    return () => watcher.disconnect();
  }, []);
  useEffect(() => {
    if (!props.live) return;
    const t = setInterval(() => setTick((n) => n + 1), 2000);
    return () => clearInterval(t);
  }, [props.live]);
  useEffect(() => {
    let stop = false;
    fetchSeries(props.trialIds, props.group, MAX_POINTS, window_?.[0], window_?.[1]).then((trials) => {
      if (stop) return;
      setData({
        trials: trials.map((t) => ({ trialId: t.trial.id, points: t.metrics[0]?.data ?? [] })),
        zoom: window_,
        loaded: true,
      });
    });
    return () => { stop = true; };
  }, [props.trialIds.join(","), props.group, window_?.[0], window_?.[1], tick]);

  const names = useMemo(() => metricNames(data.trials), [data]);
  const epochs = useMemo(() => hasEpochs(data.trials), [data]);
  const x: XAxis = axis === "epochs" && !epochs ? "batches" : axis;
  const shownNames = names.filter((n) => !hidden.has(n));
  const { panels, dropped } = useMemo(() => {
    const lines = linesOf(data.trials, shownNames, x).map((l) => ({ ...l, y: smooth(l.y, weight) }));
    let dropped = 0;
    const drawn = log ? lines.map((l) => { const f = forLog(l.y); dropped += f.dropped; return { ...l, y: f.y }; }) : lines;
    return { panels: panelsOf(drawn, layout, props.group), dropped };
  }, [data, shownNames.join("\u0000"), x, weight, log, layout, props.group]);
  // In a plot per metric a trial keeps its colour from plot to plot and is named in the legend.
  const figures = useMemo(() => {
    const colour = new Map(data.trials.map((t, i) => [t.trialId, COLORS[i % COLORS.length]]));
    const perTrial = layout === "metric";
    return panels.map((p) => ({
      p,
      shown: p.lines.map((l): Series => ({ label: perTrial ? `trial ${l.trialId}` : l.label, x: l.x, y: l.y })),
      colors: perTrial ? p.lines.map((l) => colour.get(l.trialId)!) : undefined,
    }));
  }, [panels]);
  const plotWidth = width ? panelWidth(width, panels.length) : 0;

  // What tests and benchmarks read: the lines drawn (every panel's), absent until the chart
  // holds the server's answer; paintMs is uPlot's drawing time summed over the panels.
  useEffect(() => {
    const charts = ((window as any).__charts = (window as any).__charts || {});
    if (!data.loaded || !plotWidth) {
      delete charts[props.id];
      return;
    }
    const lines = panels.flatMap((p) => p.lines);
    charts[props.id] = {
      labels: lines.map((l) => l.label),
      series: lines.map((l) => ({ x: l.x, y: l.y })),
      zoom: data.zoom,
      x,
      layout,
      log,
      metrics: names,
      panels: panels.map((p) => ({ key: p.key, title: p.title, xLabel: X_LABELS[x], yLabel: p.yLabel,
        lines: p.lines.map((l) => l.label) })),
      paintMs: Object.values(paints.current).reduce((a, b) => a + b, 0),
    };
  }, [panels, plotWidth, data.loaded]);

  const onPaint = (panel: string) => (ms: number) => {
    paints.current[panel] = ms;
    const c = (window as any).__charts?.[props.id];
    if (c) c.paintMs = Object.values(paints.current).reduce((a, b) => a + b, 0);
  };
  const toggle = (n: string) => {
    const next = new Set(hidden);
    next.has(n) ? next.delete(n) : next.add(n);
    setHidden(next);
  };
  const zoomable = x === "batches";
  return (
    <div class="metric-chart" data-chart={props.id}>
      <div class="toolbar">
        <label>X axis{" "}
          <select name={`${props.id}-x`} value={x}
            onChange={(e) => setAxis((e.target as HTMLSelectElement).value as XAxis)}>
            <option value="batches">Batches</option>
            <option value="epochs" disabled={!epochs}>Epochs{epochs ? "" : " (none reported)"}</option>
            <option value="time">Time</option>
          </select></label>
        <label>Layout{" "}
          <select name={`${props.id}-layout`} value={layout}
            onChange={(e) => setLayout((e.target as HTMLSelectElement).value as Layout)}>
            <option value="metric">One plot per metric</option>
            <option value="shared">All metrics on one axis</option>
          </select></label>
        <label><input type="checkbox" name={`${props.id}-log`} checked={log}
          onChange={(e) => setLog((e.target as HTMLInputElement).checked)} /> Log scale</label>
        <label>Smoothing <input type="range" min="0" max="0.99" step="0.01" value={weight}
          onInput={(e) => setWeight(Number((e.target as HTMLInputElement).value))} /></label>
        <form class="zoom" aria-label={`Zoom the ${props.group} chart`} onSubmit={(e) => {
          const field = submitted(e);
          const from = field(`${props.id}-from`), to = field(`${props.id}-to`);
          const lo = Number(from), hi = Number(to);
          if (from.trim() && to.trim() && Number.isFinite(lo) && Number.isFinite(hi) && lo < hi) setWindow([lo, hi]);
        }}>
          <label>Zoom from batch <input type="number" name={`${props.id}-from`} size={7} /></label>
          <label> to <input type="number" name={`${props.id}-to`} size={7} /></label>
          <button type="submit">Zoom</button>
        </form>
        <button type="button" onClick={() => setWindow(null)} disabled={!window_}>Reset zoom</button>
      </div>
      {names.length > 0 && (
        <fieldset class="metric-picker">
          <legend>Metrics in the {props.group} chart</legend>
          {names.map((n) => (
            <label><input type="checkbox" name={`${props.id}-metric`} value={n} checked={!hidden.has(n)}
              onChange={() => toggle(n)} /> {n}</label>))}
        </fieldset>
      )}
      <p class="muted chart-note">
        {zoomable ? "Drag across a plot, or type a batch range, to zoom; the server sends every point once the window is small enough." :
          "Drag across a plot to zoom into it; double-click to zoom out."}
        {dropped > 0 && ` ${dropped} values at or below 0 are not drawn on the log scale.`}
      </p>
      <div ref={box} class={layout === "metric" ? "chart-grid" : ""}>
        {data.loaded && !panels.length && (
          <p class="muted">{names.length ? "No metric is chosen." : `No ${props.group} metrics reported yet.`}</p>)}
        {plotWidth > 0 && figures.map(({ p, shown, colors }) => (
          <figure class="chart" key={`${p.key}-${x}`}>
            <Plot panel={`${props.id}:${p.key}`} title={p.title} series={shown} colors={colors}
              xLabel={X_LABELS[x]} yLabel={p.yLabel} time={x === "time"} integerX={x === "batches"} log={log} width={plotWidth}
              sync={props.id} onZoom={zoomable ? (lo, hi) => setWindow([lo, hi]) : undefined}
              onPaint={onPaint(p.key)} />
            <figcaption class="sr-only">
              {p.title}, {X_LABELS[x].toLowerCase()} across, {p.yLabel} up: {describe(shown)}
            </figcaption>
          </figure>
        ))}
      </div>
    </div>
  );
}
