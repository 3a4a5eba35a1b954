/* The metric explorer (the report embeds this file, uPlot and the data beside it).
 * Every <section class="explorer"> of the page: find a metric by name, add it as a panel; every
 * panel of a section shares one time axis (drag to zoom, Ctrl + wheel to zoom, buttons to pan, double-click
 * or "whole range" to reset); the node's incidents are shaded and its checkpoints are the strip
 * along the bottom. Names and titles come from the input: they only ever reach the page as text.
 */
(function () {
  "use strict";
  if (window.ftdcExplorer) return;
  const EMPTY = 0xffff, HEIGHT = 150, RESULTS = 40;
  const SEVERITY = {critical: "rgba(198,40,40,0.16)", warning: "rgba(239,143,0,0.18)", info: "rgba(117,117,117,0.12)"};

  const iso = s => new Date(s * 1000).toISOString().replace("T", " ").replace(/\.000Z$|Z$/, "").concat(" UTC");
  function span(seconds) {
    const s = Math.round(seconds);
    if (s < 120) return s + " s";
    if (s < 7200) return Math.round(s / 60) + " min";
    if (s < 172800) return (s / 3600).toFixed(1) + " h";
    return (s / 86400).toFixed(1) + " days";
  }
  // Axis ticks in UTC, as precise as their spacing needs: `05-14 09:30`, `09:30:15`.
  function ticks(u, splits, axis, space, step) {
    return splits.map(t => {
      const text = new Date(t * 1000).toISOString();
      return step < 60 ? text.slice(11, 19) : step < 86400 ? text.slice(5, 10) + " " + text.slice(11, 16) : text.slice(0, 10);
    });
  }
  // Levels as short numbers (3 significant digits, k M G T), so any magnitude fits the axis and the readout.
  function short(v) {
    if (v === null || v === undefined || !isFinite(v)) return "–";
    const a = Math.abs(v), units = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (const [size, unit] of units) if (a >= size) return +(v / size).toPrecision(3) + unit;
    return String(+v.toPrecision(3));
  }
  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function levels(series) {
    const binary = atob(series.levels), bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    const q = new Uint16Array(bytes.buffer), step = (series.high - series.low) / (EMPTY - 1), out = new Array(q.length);
    for (let i = 0; i < q.length; i++) out[i] = q[i] === EMPTY ? null : series.low + q[i] * step;
    return out;
  }

  function setup(root) {
    const data = JSON.parse(root.querySelector("script.explorer-data").textContent);
    const columns = data.columns, x = new Float64Array(2 * columns);
    // Each column's minimum then maximum at its middle: the stroke between them is the column's envelope.
    for (let i = 0; i < columns; i++) x[2 * i] = x[2 * i + 1] = data.first + (i + 0.5) * data.step;
    const whole = [data.first, data.first + columns * data.step];
    const byName = new Map(data.series.map(s => [s.name, s]));
    const checkpoints = data.checkpoints;
    const search = root.querySelector(".explorer-search"), results = root.querySelector(".explorer-results");
    const holder = root.querySelector(".explorer-panels"), shown = root.querySelector(".explorer-range");
    const panels = new Map();
    let range = whole.slice(), syncing = false;

    function width() { return Math.max(240, holder.clientWidth - 2); }

    function shade(u) {
      const ctx = u.ctx, {left, top, width: w, height: h} = u.bbox;
      const at = t => u.valToPos(t, "x", true);
      ctx.save();
      ctx.beginPath(); ctx.rect(left, top, w, h); ctx.clip();
      for (const i of data.incidents) {
        const a = at(i.start), b = at(i.end);
        if (b < left || a > left + w) continue;
        ctx.fillStyle = SEVERITY[i.severity] || SEVERITY.info;
        ctx.fillRect(a, top, Math.max(b - a, 2), h);
      }
      const strip = Math.round(5 * devicePixelRatio);
      ctx.fillStyle = "rgba(55,71,79,0.6)";
      for (const [s, e] of checkpoints) {
        if (e < range[0] || s > range[1]) continue;
        const a = at(s), b = at(e);
        ctx.fillRect(a, top + h - strip, Math.max(b - a, 1), strip);
      }
      ctx.restore();
    }

    function setRange(lo, hi, from) {
      const width = Math.max(hi - lo, data.step / 50);
      lo = Math.max(whole[0], Math.min(lo, whole[1] - width));
      hi = Math.min(whole[1], lo + width);
      range = [lo, hi];
      syncing = true;
      try {
        for (const panel of panels.values()) if (panel.plot !== from) panel.plot.setScale("x", {min: lo, max: hi});
      } finally { syncing = false; }
      for (const panel of panels.values()) {
        panel.node.dataset.min = panel.plot.scales.x.min;
        panel.node.dataset.max = panel.plot.scales.x.max;
      }
      root.dataset.min = lo; root.dataset.max = hi;
      shown.textContent = iso(lo) + " – " + iso(hi) + " (" + span(hi - lo) + ")";
    }

    function zoom(factor, centre) {
      const c = centre === undefined ? (range[0] + range[1]) / 2 : centre;
      setRange(c - (c - range[0]) * factor, c + (range[1] - c) * factor);
    }
    function pan(share) { const d = (range[1] - range[0]) * share; setRange(range[0] + d, range[1] + d); }

    function add(name) {
      const series = byName.get(name);
      if (!series || panels.has(name)) return;
      const node = element("div", "explorer-panel");
      node.dataset.metric = name;
      const head = element("div", "explorer-head");
      head.append(element("b", "", name), element("span", "explorer-unit", series.unit ? " (" + series.unit + ")" : ""),
                  element("span", "explorer-meaning", series.meaning ? " · " + series.meaning : ""));
      const close = element("button", "explorer-remove", "×");
      close.type = "button"; close.title = "remove this panel";
      close.addEventListener("click", () => { panels.get(name).plot.destroy(); panels.delete(name); node.remove(); });
      head.append(close);
      node.append(head);
      holder.append(node);
      const options = {
        width: width(), height: HEIGHT,
        legend: {live: true},
        scales: {x: {time: true}},
        tzDate: t => uPlot.tzDate(new Date(t * 1000), "Etc/UTC"),
        series: [{label: "UTC", value: (u, t) => t === null ? "–" : iso(t)},
                 {label: series.unit || "value", stroke: "#1565c0", width: 1, spanGaps: false, points: {show: false}, value: (u, v) => short(v)}],
        axes: [{values: ticks, space: 90}, {size: 56, values: (u, splits) => splits.map(short)}],
        cursor: {drag: {x: true, y: false}, points: {show: false}},
        hooks: {
          drawClear: [shade],
          setScale: [(u, key) => {
            if (key === "x" && !syncing && panels.has(name)) setRange(u.scales.x.min, u.scales.x.max, u);
          }],
        },
      };
      const plot = new uPlot(options, [x, levels(series)], node);
      panels.set(name, {plot, node});
      // The wheel scrolls the page (a report read down past its explorer must not stick there); with Ctrl (or ⌘,
      // or a trackpad's pinch, which browsers send as Ctrl + wheel) it zooms about the pointer.
      plot.over.addEventListener("wheel", event => {
        if (!event.ctrlKey && !event.metaKey) return;
        event.preventDefault();
        const box = plot.over.getBoundingClientRect();
        zoom(event.deltaY < 0 ? 0.7 : 1 / 0.7, plot.posToVal(event.clientX - box.left, "x"));
      }, {passive: false});
      setRange(range[0], range[1]);
    }

    function list(query) {
      const words = query.toLowerCase().split(/\s+/).filter(Boolean);
      const hit = text => words.every(w => text.toLowerCase().includes(w));
      results.textContent = "";
      if (!words.length) return;
      const found = data.series.filter(s => hit(s.name + " " + s.meaning)).slice(0, RESULTS);
      for (const s of found) {
        const item = element("li");
        const button = element("button", "explorer-add", "add");
        button.type = "button";
        button.addEventListener("click", () => { add(s.name); results.textContent = ""; search.value = ""; });
        item.append(button, element("span", "", " " + s.name + (s.unit ? " (" + s.unit + ")" : "")),
                    element("span", "explorer-meaning", s.meaning ? " · " + s.meaning : ""));
        results.append(item);
      }
      const missing = data.others.filter(hit).slice(0, Math.max(0, RESULTS - found.length));
      for (const name of missing) {
        results.append(element("li", "explorer-other", name + " · not in this file: add it with explore --metrics"));
      }
      if (!found.length && !missing.length) results.append(element("li", "explorer-other", "no metric matches"));
    }

    search.addEventListener("input", () => list(search.value));
    search.addEventListener("keydown", event => {
      if (event.key !== "Enter") return;
      const first = results.querySelector(".explorer-add");
      if (first) first.click();
    });
    root.querySelector(".explorer-in").addEventListener("click", () => zoom(0.5));
    root.querySelector(".explorer-out").addEventListener("click", () => zoom(2));
    root.querySelector(".explorer-left").addEventListener("click", () => pan(-0.5));
    root.querySelector(".explorer-right").addEventListener("click", () => pan(0.5));
    root.querySelector(".explorer-whole").addEventListener("click", () => setRange(whole[0], whole[1]));
    const incidents = root.querySelector(".explorer-incidents");
    for (const i of data.incidents) {
      const button = element("button", "explorer-incident " + i.severity, i.label);
      button.type = "button"; button.title = i.title;
      const pad = Math.max(60, (i.end - i.start) / 2);
      button.addEventListener("click", () => setRange(i.start - pad, i.end + pad));
      incidents.append(button);
    }
    let resizing = 0;
    window.addEventListener("resize", () => {
      cancelAnimationFrame(resizing);
      resizing = requestAnimationFrame(() => { for (const p of panels.values()) p.plot.setSize({width: width(), height: HEIGHT}); });
    });
    for (const name of data.opening) add(name);
    setRange(whole[0], whole[1]);
    root.explorer = {add, setRange, zoom, pan, panels};
  }

  window.ftdcExplorer = {setup};
  const start = () => document.querySelectorAll("section.explorer").forEach(setup);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
