// The audit page: summary, charts (inline SVG), a sortable and filterable table of findings,
// the file view with the finding lines highlighted, and the dynamic measurements.
// No libraries and no network: everything is in this file and the embedded JSON.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("audit-data").textContent);
  const doc = data.document;
  const COLORS = { rule: "#1a7f37", setting: "#9a6700", manual: "#cf222e",
                   before: "#8c959f", after: "#0969da" };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value);
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined) {
        node.append(child instanceof Node ? child : document.createTextNode(String(child)));
      }
    }
    return node;
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    for (const child of children) node.append(child);
    return node;
  }

  function percent(part, total) {
    return total ? Math.round((100 * part) / total) + " %" : "-";
  }

  function card(value, label, kind) {
    return el("div", { class: "card " + (kind || "") },
      el("div", { class: "value", id: kind ? "card-" + kind : null }, value),
      el("div", { class: "label" }, label));
  }

  function renderSummary() {
    const s = doc.summary;
    document.getElementById("total-findings").textContent = s.findings;
    const cards = document.getElementById("cards");
    cards.append(card(s.files_with_findings + " / " + s.files, "files with findings"));
    for (const fix of ["rule", "setting", "manual"]) {
      const label = { rule: "fixable by a rule", setting: "avoidable by a Dynamo setting",
                      manual: "manual" }[fix];
      cards.append(card(s.by_fix[fix] + " (" + percent(s.by_fix[fix], s.findings) + ")",
                        label, fix));
    }
    if (doc.dynamic) {
      const t = doc.dynamic.totals;
      cards.append(card(t.breaks, "breaks measured in " + t.targets + " targets"));
      const ba = doc.dynamic.before_after;
      if (ba) cards.append(card(ba.totals.before.breaks + " → " + ba.totals.after.breaks,
                                "breaks before → after " + ba.rules.join(", ")));
      const sw = doc.dynamic.switches;
      if (sw) {
        const b = sw.totals.breaks, last = sw.trees[sw.trees.length - 1];
        cards.append(card(b.default.original + " → " + b.switches[last],
                          "breaks: original by default → " + last + " with the switches"));
      }
    }
    if (doc.baseline) {
      cards.append(card(doc.baseline.new, "new since " + doc.baseline.path + " (" +
                        doc.baseline.fixed + " fixed)"));
    }
  }

  // A horizontal bar chart: rows of {label, parts: [{value, color, name}]}.
  function barChart(title, rows, legend) {
    const width = 460, bar = 16, gap = 6, labelWidth = 190;
    const max = Math.max(1, ...rows.map((r) => r.parts.reduce((a, p) => a + p.value, 0)));
    const height = rows.length * (bar + gap) + 4;
    const chart = svg("svg", { width, height, role: "img", "aria-label": title });
    rows.forEach((row, i) => {
      const y = i * (bar + gap);
      chart.append(svg("text", { x: 0, y: y + 12 }, row.label.slice(0, 30)));
      let x = labelWidth;
      for (const part of row.parts) {
        const w = ((width - labelWidth - 40) * part.value) / max;
        if (w > 0) {
          const rect = svg("rect", { x, y, width: w, height: bar, fill: part.color });
          rect.append(svg("title", {}, part.name + ": " + part.value));
          chart.append(rect);
        }
        x += w;
      }
      const total = row.parts.reduce((a, p) => a + p.value, 0);
      chart.append(svg("text", { x: x + 4, y: y + 12 }, String(total)));
    });
    const keys = el("div", { class: "legend" }, legend.map(([name, color]) =>
      el("span", {}, el("i", { style: "background:" + color }), name)));
    return el("div", { class: "chart" }, el("h3", {}, title), chart, keys);
  }

  function renderCharts() {
    const charts = document.getElementById("charts");
    const causes = doc.summary.causes.map((c) => ({ label: c.pattern, parts: [
      { value: c.rule, color: COLORS.rule, name: "rule" },
      { value: c.setting, color: COLORS.setting, name: "setting" },
      { value: c.manual, color: COLORS.manual, name: "manual" }] }));
    if (causes.length) {
      charts.append(barChart("Findings by cause", causes, [["rule", COLORS.rule],
        ["setting", COLORS.setting], ["manual", COLORS.manual]]));
    }
    const dynamic = doc.dynamic;
    if (!dynamic) return;
    const byCause = {};
    for (const b of dynamic.breaks) {
      const name = b.gb_id ? b.gb_id + " " + (b.gb_type || "") : b.reason;
      byCause[name] = (byCause[name] || 0) + b.count;
    }
    const rows = Object.entries(byCause).sort((a, b) => b[1] - a[1]).map(([label, value]) =>
      ({ label, parts: [{ value, color: COLORS.after, name: "breaks" }] }));
    if (rows.length) charts.append(barChart("Measured breaks by cause", rows, []));
    const ba = dynamic.before_after;
    if (ba) {
      const pairs = [];
      for (const t of ba.targets.filter((t) => !t.error)) {
        pairs.push({ label: t.name.split("::").pop() + " before",
                     parts: [{ value: t.before.breaks, color: COLORS.before, name: "before" }] });
        pairs.push({ label: t.name.split("::").pop() + " after",
                     parts: [{ value: t.after.breaks, color: COLORS.after, name: "after" }] });
      }
      charts.append(barChart("Breaks before / after " + ba.rules.join(", "), pairs,
        [["before", COLORS.before], ["after", COLORS.after]]));
    }
    if (dynamic.what_if) {
      const switches = dynamic.what_if.switches.map((s) => ({ label: s.switch, parts: [
        { value: s.breaks_removed, color: COLORS.rule, name: "breaks removed" }] }));
      charts.append(barChart("Breaks each Dynamo switch removes", switches, []));
    }
    if (dynamic.switches) {
      const removed = Object.entries(dynamic.switches.removed_by).map(([label, value]) =>
        ({ label, parts: [{ value, color: COLORS.after, name: "break sites" }] }));
      charts.append(barChart("Break sites by what removes them", removed, []));
    }
  }

  function fixText(f) {
    if (f.fix === "rule") return "rule " + f.rule;
    if (f.fix === "setting") return "setting " + f.settings.map((s) => s.name).join(", ");
    return "manual";
  }

  function detailText(f) {
    if (f.rewrite) return "→ " + f.rewrite.after;
    const why = f.why_not;
    if (!why) return "";
    const rules = why.rules.length ? " (" + why.rules.join(", ") + ")" : "";
    return "not rewritten" + rules + ": " + why.reason + ". Fix: " + why.remedy;
  }

  const columns = [
    ["location", (f) => f.file + ":" + String(f.line).padStart(6, "0")],
    ["pattern", (f) => f.pattern], ["code", (f) => f.code], ["fix", (f) => f.fix],
    ["confidence", (f) => f.confidence], ["seen", (f) => (f.observed ? f.observed.breaks : 0)],
    ["details", (f) => detailText(f)]];
  let sortColumn = 0, sortDirection = 1;

  function renderFindings() {
    const body = document.querySelector("#findings tbody");
    const head = document.querySelector("#findings thead tr");
    columns.forEach(([name], index) => {
      head.append(el("th", { "data-column": index, onclick: () => sortBy(index) }, name));
    });
    for (const f of doc.findings) {
      const row = el("tr", { class: "finding", "data-id": f.id, "data-pattern": f.pattern,
                             "data-fix": f.fix, onclick: () => showFile(f.file, f.id) },
        el("td", {}, el("code", {}, f.file + ":" + f.line)),
        el("td", {}, f.pattern),
        el("td", {}, el("code", {}, f.code)),
        el("td", { class: "fix-" + f.fix }, fixText(f)),
        el("td", {}, f.confidence),
        el("td", {}, f.observed ? f.observed.breaks + "× " + f.observed.gb_ids.join(", ") : ""),
        el("td", { class: "why" }, detailText(f)));
      row.finding = f;
      body.append(row);
    }
    const patterns = document.getElementById("filter-pattern");
    for (const p of [...new Set(doc.findings.map((f) => f.pattern))].sort()) {
      patterns.append(el("option", { value: p }, p));
    }
    for (const id of ["filter-text", "filter-pattern", "filter-fix"]) {
      document.getElementById(id).addEventListener("input", applyFilters);
    }
    applyFilters();
  }

  function sortBy(index) {
    sortDirection = sortColumn === index ? -sortDirection : 1;
    sortColumn = index;
    const body = document.querySelector("#findings tbody");
    const key = columns[index][1];
    const rows = [...body.rows].sort((a, b) => {
      const x = key(a.finding), y = key(b.finding);
      return (x < y ? -1 : x > y ? 1 : 0) * sortDirection;
    });
    body.append(...rows);
    document.querySelectorAll("#findings th").forEach((th, i) => {
      th.className = i === index ? (sortDirection > 0 ? "sorted-asc" : "sorted-desc") : "";
    });
  }

  function applyFilters() {
    const text = document.getElementById("filter-text").value.toLowerCase();
    const pattern = document.getElementById("filter-pattern").value;
    const fix = document.getElementById("filter-fix").value;
    let shown = 0;
    for (const row of document.querySelectorAll("#findings tbody tr")) {
      const f = row.finding;
      const visible = (!pattern || f.pattern === pattern) && (!fix || f.fix === fix) &&
        (!text || row.textContent.toLowerCase().includes(text));
      row.style.display = visible ? "" : "none";
      shown += visible ? 1 : 0;
    }
    document.getElementById("shown-count").textContent =
      shown + " of " + doc.findings.length + " findings shown";
  }

  function showFile(file, id) {
    const view = document.getElementById("file-view");
    view.replaceChildren();
    const hits = new Set();
    for (const f of doc.findings.filter((f) => f.file === file)) {
      for (let n = f.line; n <= (f.id === id ? f.end_line : f.line); n++) hits.add(n);
    }
    const pre = el("pre", {});
    let next = null;
    for (const [start, lines] of data.sources[file] || []) {
      if (next !== null && start > next) pre.append(el("span", { class: "gap" }, "⋯"));
      lines.forEach((text, i) => {
        const n = start + i;
        pre.append(el("span", { class: hits.has(n) ? "hit" : "", "data-line": n },
          el("span", { class: "ln" }, n), text, "\n"));
      });
      next = start + lines.length;
    }
    view.append(el("h3", { id: "file-view-name" }, file), pre);
    const first = pre.querySelector(".hit");
    if (first) first.scrollIntoView({ block: "nearest" });
  }

  function simpleTable(id, header, rows) {
    const table = document.getElementById(id);
    table.append(el("thead", {}, el("tr", {}, header.map((h) => el("th", {}, h)))));
    table.append(el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c))))));
    table.parentElement.hidden = false;
  }

  function yes(v) { return v === null || v === undefined ? "-" : v ? "yes" : "no"; }
  function equal(v) { return v === null || v === undefined ? "-" : v ? "equal" : "DIFFER"; }

  function renderDynamic() {
    const d = doc.dynamic;
    if (!d) return;
    document.getElementById("dynamic-settings").textContent =
      "torch " + d.torch + ", " + d.settings;
    simpleTable("targets", ["target", "graphs", "breaks", "fullgraph", "skipped frames",
      "recompilations", "compile s", "outputs"], d.targets.map((t) => t.error
      ? [t.name, "-", "-", "-", "-", "-", "-", t.error]
      : [t.name, t.graphs, t.breaks, yes(t.fullgraph), t.skipped_frames, t.recompilations,
         t.compile_seconds.toFixed(2), equal(t.outputs_equal)]));
    simpleTable("breaks", ["count", "GB id", "cause", "site", "source", "targets", "hints"],
      d.breaks.map((b) => [b.count, b.gb_id || "?", b.gb_type || b.reason,
        b.frame ? b.frame.file + ":" + b.frame.line : "?", b.frame ? b.frame.source : "",
        b.targets.join(", "), (b.hints || []).join(" ")]));
    if (d.before_after) {
      simpleTable("before-after", ["target", "breaks", "graphs", "fullgraph", "outputs",
        "compiled latency"], d.before_after.targets.map((t) => t.error
        ? [t.name, "-", "-", "-", t.error, "-"]
        : [t.name, t.before.breaks + " → " + t.after.breaks,
           t.before.graphs + " → " + t.after.graphs,
           yes(t.before.fullgraph) + " → " + yes(t.after.fullgraph), equal(t.outputs_equal),
           t.latency_ratio ? "×" + t.latency_ratio.toFixed(2) : "-"]));
    }
    if (d.what_if) {
      simpleTable("what-if", ["target", "switch", "breaks", "removed", "values", "printed"],
        d.what_if.runs.map((r) => r.error ? [r.target, r.switch, "-", r.error, "-", "-"]
          : [r.target, r.switch + " = " + r.value, r.breaks_before + " → " + r.breaks_after,
             r.removed.concat(r.reduced || []).join(", ") || "none", equal(r.outputs_equal),
             equal(r.printed_equal)]));
    }
    if (d.switches) renderSwitches(d.switches);
  }

  // --dynamo-config / --dynamic-sizes: breaks per cell (tree x mode), what removes each site.
  function renderSwitches(sw) {
    document.getElementById("switch-names").textContent = Object.entries(sw.dynamo_config)
      .map(([k, v]) => k + "=" + v).join(", ");
    const cells = [];
    for (const tree of sw.trees) {
      for (const mode of ["default", "switches"]) {
        cells.push([mode, tree, tree + (mode === "switches" ? " + switches" : " default")]);
      }
    }
    const rewritten = sw.trees.includes("rewritten");
    simpleTable("switch-targets", ["target"].concat(cells.map((c) => c[2]),
      rewritten ? ["rewrite exact (default / switches)"] : []),
      sw.targets.map((t) => t.error ? [t.name].concat(cells.map(() => "-"), [t.error])
        : [t.name].concat(cells.map(([m, tr]) => t.breaks[m][tr]),
          rewritten ? [yes(t.exact.default) + " / " + yes(t.exact.switches)] : [])));
    simpleTable("switch-sites", ["site", "GB id", "source"].concat(cells.map((c) => c[2]),
      ["removed by"]), sw.sites.map((s) => [s.frame ? s.frame.file + ":" + s.frame.line : "?",
        s.gb_id || "?", s.frame ? s.frame.source : ""].concat(
        cells.map(([m, tr]) => s.count[m][tr]), [s.removed_by])));
  }

  renderSummary();
  renderCharts();
  renderFindings();
  renderDynamic();
  document.body.setAttribute("data-ready", "1");
})();
