/* The metric explorer (the report embeds this file, uPlot and the data beside it).
 * Every <section class="explorer"> of the page: find a metric by name, add it as a panel, or to a panel beside
 * what it draws (of this node or, on a page of several nodes, of the others); every panel of a section shares one
 * time axis (drag to zoom, Ctrl + wheel to zoom, buttons to pan, double-click or "whole range" to reset) and one
 * cursor over every panel of the page reads each one's value at the same instant; the range and panels are kept
 * in the address' fragment, so the view can be shared; the node's incidents are shaded and its checkpoints are
 * the strip along the bottom. Names and titles come from the input: they only ever reach the page as text, and a
 * fragment is read as untrusted too (bounded, every name looked up, every number checked).
 */
(function () {
  "use strict";
  if (window.ftdcExplorer) return;
  const EMPTY = 0xffff, EMPTY8 = 0xff, HEIGHT = 190, RESULTS = 40;
  // What a fragment may ask for: longer ones, more panels or lines, are cut (it is input like any other).
  const HASH = 20000, PANELS = 40, LINES = 8;
  const COLOURS = ["#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#5d4037", "#ad1457"];
  // One cursor for every panel of the page: they share the time axis, whatever node they draw.
  const SYNC = "ftdc-explorer";
  const sections = [];
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
  // Ticks of a y-axis: the widest step of 1, 2 or 5 times a power of ten that puts at least three in [min, max].
  function yTicks(u, axis, min, max) {
    if (!isFinite(min) || !isFinite(max) || !(max > min)) return isFinite(min) ? [min] : [];
    const count = s => Math.floor(max / s + 1e-9) - Math.ceil(min / s - 1e-9) + 1;
    let step = Math.pow(10, Math.ceil(Math.log10(max - min)));
    for (const f of [1, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01]) if (count(step * f) >= 3) { step *= f; break; }
    const out = [];
    for (let k = Math.ceil(min / step - 1e-9); k * step <= max + step * 1e-9; k++) out.push(k * step);
    return out;
  }
  // Their labels, k M G T for the largest, with as many decimals as the step needs: no two alike.
  function yLabels(u, splits) {
    const big = Math.max(...splits.map(Math.abs)), step = splits.length > 1 ? splits[1] - splits[0] : 0;
    const [size, unit] = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"], [1, ""]].find(([size]) => big >= size) || [1, ""];
    const digits = step > 0 ? Math.min(12, Math.max(0, Math.ceil(-Math.log10(step / size) - 1e-9))) : 3;
    return splits.map(v => v === 0 ? "0" : (v / size).toFixed(digits).replace(/^-(0\.?0*)$/, "$1") + unit);
  }
  // A column's value at the cursor: its minimum and maximum (the x of each column is given twice, one of each).
  function pair(u, v, si, idx) {
    if (idx === null || idx === undefined) return "–";
    if (u.samples) return short(v);  // the real samples (a served page zoomed in): one value each
    const at = idx - (idx % 2), lo = u.data[si][at], hi = u.data[si][at + 1];
    if (lo === null || lo === undefined) return "–";
    return short(lo) === short(hi) ? short(lo) : short(lo) + "–" + short(hi);
  }
  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function bytes(text) {
    const binary = atob(text), out = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
    return out;
  }
  const words = text => new Uint16Array(bytes(text).buffer);
  // A series' values: its levels, written as they are, as (level, count) runs (a constant series is one run), or at
  // 8 bits (a page past its budget).
  function levels(series) {
    if (series.levels8 !== undefined) {
      const step = (series.high - series.low) / (EMPTY8 - 1);
      return Array.from(bytes(series.levels8), q => q === EMPTY8 ? null : series.low + q * step);
    }
    const step = (series.high - series.low) / (EMPTY - 1), value = q => q === EMPTY ? null : series.low + q * step;
    if (series.levels !== undefined) return Array.from(words(series.levels), value);
    const runs = words(series.runs), out = [];
    for (let i = 0; i + 1 < runs.length; i += 2) {
      const v = value(runs[i]);
      for (let k = 0; k < runs[i + 1]; k++) out.push(v);
    }
    return out;
  }

  function setup(root) {
    const data = JSON.parse(root.querySelector("script.explorer-data").textContent);
    const columns = data.columns, x = new Float64Array(2 * columns);
    // Each column's minimum then maximum at its middle: the stroke between them is the column's envelope.
    for (let i = 0; i < columns; i++) x[2 * i] = x[2 * i + 1] = data.first + (i + 0.5) * data.step;
    const whole = [data.first, data.first + columns * data.step];
    const byName = new Map(data.series.map(s => [s.name, s]));
    const decoded = new Map();
    const checkpoints = data.checkpoints;
    const search = root.querySelector(".explorer-search"), results = root.querySelector(".explorer-results");
    const holder = root.querySelector(".explorer-panels"), shown = root.querySelector(".explorer-range");
    const hint = search.placeholder;
    const panels = [];
    let range = whole.slice(), ready = false, writing = 0, target = null, fetching = 0;
    const self = {id: root.id, node: data.node, byName, first: data.first, step: data.step, columns, values, samples};
    sections.push(self);

    function width() { return Math.max(240, holder.clientWidth - 2); }
    function values(name) {
      if (!decoded.has(name)) decoded.set(name, levels(byName.get(name)));
      return decoded.get(name);
    }
    // A metric of another node on this node's columns: the extremes of its columns that overlap each of these.
    function resampled(other, name) {
      const v = other.values(name), out = new Array(2 * columns).fill(null);
      for (let c = 0; c < columns; c++) {
        const a = data.first + c * data.step;
        const i0 = Math.max(0, Math.floor((a - other.first) / other.step));
        const i1 = Math.min(other.columns - 1, Math.ceil((a + data.step - other.first) / other.step) - 1);
        let lo = Infinity, hi = -Infinity;
        for (let i = i0; i <= i1; i++) if (v[2 * i] !== null) { lo = Math.min(lo, v[2 * i]); hi = Math.max(hi, v[2 * i + 1]); }
        if (lo <= hi) { out[2 * c] = lo; out[2 * c + 1] = hi; }
      }
      return out;
    }
    const on = line => line.sec === self ? values(line.name) : resampled(line.sec, line.name);

    // On a page `explore --serve` serves: the real samples of a recorded metric from `lo` to `hi` (seconds), as
    // [times, values], or null (not served, a derived series, the server's refusal).
    async function samples(name, lo, hi) {
      if (data.served === undefined || byName.get(name).source !== "ftdc") return null;
      const query = "node=" + data.served + "&metric=" + encodeURIComponent(name) + "&from=" + Math.floor(lo * 1000) + "&to=" + Math.ceil(hi * 1000);
      try {
        const answer = await fetch("samples?" + query);
        if (!answer.ok) return null;
        const body = await answer.json();
        return Array.isArray(body.t) && Array.isArray(body.v) && body.t.length === body.v.length ? [body.t, body.v] : null;
      } catch (e) { return null; }
    }
    // Zoomed in below the columns (fewer samples on screen than pixels), a served page draws each sample; zoomed out,
    // the columns again. A panel some of whose lines have no samples keeps its columns.
    function detail() {
      if (data.served === undefined) return;
      clearTimeout(fetching);
      fetching = setTimeout(() => {
        const [lo, hi] = range, fine = (hi - lo) / data.period <= width();
        for (const panel of panels) refine(panel, fine ? [lo, hi] : null);
      }, 120);
    }
    async function refine(panel, window) {
      const token = panel.token = (panel.token || 0) + 1;
      const tables = window ? await Promise.all(panel.lines.map(l => l.sec.samples(l.name, window[0], window[1]))) : [];
      if (token !== panel.token || !panels.includes(panel)) return;
      const plot = panel.plot;
      // New data, its y scales fitted to it, then the range again (uPlot finds the samples on screen from the scale).
      if (window && tables.every(Boolean)) {
        plot.samples = true;
        plot.setData(tables.length === 1 ? tables[0] : uPlot.join(tables));
        plot.setScale("x", {min: range[0], max: range[1]});
        panel.node.dataset.samples = plot.data[0].length;
      } else if (plot.samples) {
        plot.samples = false;
        plot.setData([x, ...panel.lines.map(on)]);
        plot.setScale("x", {min: range[0], max: range[1]});
        delete panel.node.dataset.samples;
      }
    }
    const about = line => line.sec.byName.get(line.name);

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

    function setRange(lo, hi) {
      const width = Math.max(hi - lo, data.step / 50);
      lo = Math.max(whole[0], Math.min(lo, whole[1] - width));
      hi = Math.min(whole[1], lo + width);
      range = [lo, hi];
      for (const panel of panels) panel.plot.setScale("x", {min: lo, max: hi});
      root.dataset.min = lo; root.dataset.max = hi;
      shown.textContent = iso(lo) + " – " + iso(hi) + " (" + span(hi - lo) + ")";
      remember();
      detail();
    }

    function zoom(factor, centre) {
      const c = centre === undefined ? (range[0] + range[1]) / 2 : centre;
      setRange(c - (c - range[0]) * factor, c + (range[1] - c) * factor);
    }
    function pan(share) { const d = (range[1] - range[0]) * share; setRange(range[0] + d, range[1] + d); }

    // The panel's head: each line's colour, name and unit (and node, when not this one), its controls.
    function head(panel) {
      const top = element("div", "explorer-head"), names = element("span", "explorer-names");
      panel.lines.forEach((line, k) => {
        const s = about(line), item = element("span", "explorer-line");
        const swatch = element("i", "explorer-swatch");
        swatch.style.background = COLOURS[k % COLOURS.length];
        item.append(swatch, element("b", "", line.name), element("span", "explorer-unit", " (" + s.axis + ")"));
        if (line.sec !== self) item.append(element("span", "explorer-node", " · " + line.sec.node));
        names.append(item);
      });
      const meaning = about(panel.lines[0]).meaning;
      if (panel.lines.length === 1 && meaning) names.append(element("span", "explorer-meaning", " · " + meaning));
      top.append(names);
      const more = element("button", "explorer-more", "+ metric");
      more.type = "button"; more.title = "find a metric to draw on this panel";
      more.addEventListener("click", () => aim(panel));
      top.append(more);
      if (sections.length > 1) {
        const nodes = element("button", "explorer-nodes", "+ other nodes");
        nodes.type = "button"; nodes.title = "draw this metric of every other node on this panel";
        nodes.addEventListener("click", () => {
          const first = panel.lines[0];
          for (const sec of sections) if (sec !== first.sec && sec.byName.has(first.name)) addLine(panel, {sec, name: first.name});
        });
        top.append(nodes);
      }
      const close = element("button", "explorer-remove", "×");
      close.type = "button"; close.title = "remove this panel";
      close.addEventListener("click", () => remove(panel));
      top.append(close);
      return top;
    }

    // The units of a panel's lines: the first on the left axis, a second on the right.
    const units = lines => [...new Set(lines.map(l => about(l).axis))];

    function draw(panel) {
      panel.token = (panel.token || 0) + 1;  // samples asked for the panel's former lines are not drawn
      if (panel.plot) panel.plot.destroy();
      panel.node.textContent = "";
      panel.node.dataset.metric = panel.lines[0].name;
      panel.node.append(head(panel));
      const kinds = units(panel.lines), nodes = new Set(panel.lines.map(l => l.sec)).size, names = new Set(panel.lines.map(l => l.name)).size;
      const scale = unit => unit === kinds[0] ? "y" : "y2";
      const label = line => {
        const words = [nodes > 1 ? line.sec.node : "", names > 1 ? line.name.split(".").pop() : ""].filter(Boolean).join(" ");
        return words || about(line).axis;
      };
      const options = {
        width: width(), height: HEIGHT,
        // Room on the right for the last time tick's label (centred on its tick), unless a right-hand axis gives it.
        padding: [8, kinds.length > 1 ? 8 : 44, 0, 0],
        legend: {live: true},
        scales: {x: {time: true}},
        tzDate: t => uPlot.tzDate(new Date(t * 1000), "Etc/UTC"),
        series: [{label: "UTC", value: (u, t) => t === null || t === undefined ? "–" : iso(t)},
                 ...panel.lines.map((line, k) => ({label: label(line), scale: scale(about(line).axis), stroke: COLOURS[k % COLOURS.length],
                                                    width: 1, spanGaps: false, points: {show: false}, value: pair}))],
        axes: [{values: ticks, space: 90, label: "time (UTC)", labelSize: 18, labelFont: "12px system-ui, sans-serif"},
               ...kinds.map((unit, k) => ({scale: k ? "y2" : "y", side: k ? 1 : 3, grid: {show: !k}, size: 58, label: unit, labelSize: 18,
                                           labelFont: "12px system-ui, sans-serif", splits: yTicks, values: yLabels}))],
        cursor: {
          // A drag selects; the selection becomes every panel's range through `setRange` (a panel never zooms alone,
          // and no scale a plot sets itself, as when it is made, reaches the others).
          drag: {x: true, y: false, setScale: false}, points: {show: false},
          // Only the pointer's position goes to the other panels: a drag zooms through `setRange`, not by each panel.
          sync: {key: SYNC, filters: {pub: type => type === "mousemove" || type === "mouseleave" || type === "mouseenter"}},
        },
        hooks: {
          drawClear: [shade],
          // What the panel shows, once uPlot has applied it (it applies a batch of changes at once).
          setScale: [(u, key) => {
            if (key === "x") { panel.node.dataset.min = u.scales.x.min; panel.node.dataset.max = u.scales.x.max; }
          }],
          setSelect: [u => {
            const {left, width: w} = u.select;
            if (w < 2) return;
            u.setSelect({left: 0, top: 0, width: 0, height: 0}, false);
            setRange(u.posToVal(left, "x"), u.posToVal(left + w, "x"));
          }],
        },
      };
      const plot = new uPlot(options, [x, ...panel.lines.map(on)], panel.node);
      panel.plot = plot;
      // The wheel scrolls the page (a report read down past its explorer must not stick there); with Ctrl (or ⌘,
      // or a trackpad's pinch, which browsers send as Ctrl + wheel) it zooms about the pointer.
      plot.over.addEventListener("wheel", event => {
        if (!event.ctrlKey && !event.metaKey) return;
        event.preventDefault();
        const box = plot.over.getBoundingClientRect();
        zoom(event.deltaY < 0 ? 0.7 : 1 / 0.7, plot.posToVal(event.clientX - box.left, "x"));
      }, {passive: false});
      plot.over.addEventListener("dblclick", () => setRange(whole[0], whole[1]));
    }

    // A new panel of one metric (of this node unless `sec` says another), unless one already draws it alone.
    function add(name, sec = self) {
      if (!sec.byName.has(name) || panels.length >= PANELS) return null;
      const same = panels.find(p => p.lines.length === 1 && p.lines[0].sec === sec && p.lines[0].name === name);
      if (same) return same;
      const panel = {lines: [{sec, name}], node: element("div", "explorer-panel"), plot: null};
      holder.append(panel.node);
      panels.push(panel);
      draw(panel);
      setRange(range[0], range[1]);
      return panel;
    }
    // A line more on a panel: not twice, at most LINES, at most two units (one per side); otherwise a panel of its own.
    function addLine(panel, line) {
      if (!line.sec.byName.has(line.name) || panel.lines.some(l => l.sec === line.sec && l.name === line.name)) return;
      if (panel.lines.length >= LINES || units([...panel.lines, line]).length > 2) { add(line.name, line.sec); return; }
      panel.lines.push(line);
      draw(panel);
      setRange(range[0], range[1]);
    }
    function remove(panel) {
      panel.plot.destroy(); panel.node.remove();
      panels.splice(panels.indexOf(panel), 1);
      if (target === panel) aim(null);
      remember();
    }
    // The panel the next metric found goes to (none: a new panel).
    function aim(panel) {
      if (target) target.node.classList.remove("explorer-target");
      target = panel;
      search.placeholder = panel ? "find a metric to draw beside " + panel.lines[0].name : hint;
      if (panel) { panel.node.classList.add("explorer-target"); search.focus(); }
      list(search.value);
    }

    // The view in the fragment: `#<section>&from=<s>&to=<s>&p=<metric>,<node>:<metric>&p=...`, each name
    // percent-encoded (so `&`, `=`, `,` and `:` only ever separate).
    function fragment() {
      const code = line => (line.sec === self ? "" : encodeURIComponent(line.sec.id) + ":") + encodeURIComponent(line.name);
      return [encodeURIComponent(root.id), "from=" + range[0].toFixed(3), "to=" + range[1].toFixed(3),
              ...panels.map(p => "p=" + p.lines.map(code).join(","))].join("&");
    }
    function remember() {
      if (!ready) return;
      clearTimeout(writing);
      writing = setTimeout(() => {
        const hash = "#" + fragment();
        if (hash.length > HASH) return;
        try { history.replaceState(history.state, "", hash); } catch (e) { location.replace(hash); }
      }, 150);
    }
    // The view a fragment asks for, if it names this section: what it says is checked, what is not drawn dropped.
    function asked(hash) {
      const prefix = encodeURIComponent(root.id) + "&";
      if (hash.length > HASH || !hash.startsWith(prefix)) return null;
      const number = text => /^-?[0-9]+(\.[0-9]+)?$/.test(text) ? Number(text) : NaN;
      const line = text => {
        try {
          const at = text.indexOf(":");
          const sec = at < 0 ? self : sections.find(s => s.id === decodeURIComponent(text.slice(0, at)));
          const name = decodeURIComponent(text.slice(at + 1));
          return sec && sec.byName.has(name) ? {sec, name} : null;
        } catch (e) { return null; }  // a malformed escape
      };
      const view = {from: NaN, to: NaN, panels: []};
      for (const part of hash.slice(prefix.length).split("&")) {
        const at = part.indexOf("="), key = part.slice(0, at), value = part.slice(at + 1);
        if (key === "from") view.from = number(value);
        else if (key === "to") view.to = number(value);
        else if (key === "p" && view.panels.length < PANELS) {
          const lines = value.split(",").slice(0, LINES).map(line).filter(Boolean);
          if (lines.length) view.panels.push(lines);
        }
      }
      return view;
    }
    // The panels the page opens with: the fragment's, else the node's usual ones; from then on the fragment follows.
    function open() {
      const view = asked(location.hash.slice(1));
      if (view && view.panels.length) {
        for (const [first, ...rest] of view.panels) {
          const panel = add(first.name, first.sec);
          if (panel) for (const line of rest) addLine(panel, line);
        }
      } else for (const name of data.opening) add(name);
      if (view && isFinite(view.from) && isFinite(view.to) && view.from < view.to) setRange(view.from, view.to);
      else setRange(whole[0], whole[1]);
      if (view) root.scrollIntoView();
      ready = true;
    }

    function list(query) {
      const words = query.toLowerCase().split(/\s+/).filter(Boolean);
      const hit = text => words.every(w => text.toLowerCase().includes(w));
      results.textContent = "";
      if (!words.length) return;
      const found = data.series.filter(s => hit(s.name + " " + s.meaning)).slice(0, RESULTS);
      for (const s of found) {
        const item = element("li");
        const button = element("button", "explorer-add", target ? "add here" : "add");
        button.type = "button";
        button.addEventListener("click", () => {
          if (target && panels.includes(target)) addLine(target, {sec: self, name: s.name}); else add(s.name);
          aim(null); results.textContent = ""; search.value = "";
        });
        item.append(button, element("span", "", " " + s.name + " (" + s.axis + ")"),
                    element("span", "explorer-meaning", s.meaning ? " · " + s.meaning : ""));
        results.append(item);
      }
      const missing = data.others.filter(hit).slice(0, Math.max(0, RESULTS - found.length));
      for (const name of missing) {
        results.append(element("li", "explorer-other", name + " · no value recorded in this range"));
      }
      if (!found.length && !missing.length) results.append(element("li", "explorer-other", "no metric matches"));
    }

    search.addEventListener("input", () => list(search.value));
    search.addEventListener("keydown", event => {
      if (event.key === "Escape") { aim(null); return; }
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
      resizing = requestAnimationFrame(() => { for (const p of panels) p.plot.setSize({width: width(), height: HEIGHT}); });
    });
    root.explorer = {add, addLine, setRange, zoom, pan, panels, fragment, values};
    return open;
  }

  window.ftdcExplorer = {sections};
  // Every section first, then their panels: a panel (or a fragment) may draw a metric of a node set up after its own.
  const start = () => [...document.querySelectorAll("section.explorer")].map(setup).forEach(open => open());
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
