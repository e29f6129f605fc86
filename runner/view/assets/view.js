// runner.view: draws a run, a sweep or a comparison of two runs from the JSON block #view-data.
// Every text of a record is untrusted: it reaches the page only as a text node or an attribute value set
// through the DOM (never innerHTML), so nothing in a prompt or a reply can become markup.
"use strict";
(() => {
  const parseStart = performance.now();
  const DATA = JSON.parse(document.getElementById("view-data").textContent);
  const parseMs = performance.now() - parseStart;
  const STRINGS = DATA.strings || [];
  const app = document.getElementById("app");
  const PAGE_SIZES = [50, 100, 500];
  const DISAGREE = "\u0002disagree";
  const SEP = "\u0001";

  // A long text (few-shot turn, system prompt, judge prompt) is stored once: an int is its index.
  const text = (v) => (typeof v === "number" ? STRINGS[v] : v);

  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") el.className = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    add(el, kids);
    return el;
  }
  function add(el, kids) {
    for (const k of kids.flat(Infinity)) {
      if (k === null || k === undefined || k === false) continue;
      el.append(k instanceof Node ? k : document.createTextNode(String(k)));
    }
    return el;
  }
  // Only relative links (the pages of a sweep's jobs): a scheme such as javascript: is never followed.
  const link = (href, label) => (typeof href === "string" && href && !/^[a-z][a-z0-9+.-]*:/i.test(href)
    ? h("a", { href }, label) : h("span", null, label));
  const fmt = (v, digits = 3) => (v === null || v === undefined ? "—" : typeof v === "number"
    ? (Number.isInteger(v) ? String(v) : v.toFixed(digits)) : String(v));
  const fmtCI = (ci) => (Array.isArray(ci) && ci.length === 2 && ci[0] !== null && ci[1] !== null
    ? `[${fmt(ci[0])}, ${fmt(ci[1])}]` : "");
  const money = (v) => (typeof v === "number" ? `$${v.toFixed(4)}` : "unknown");
  function show(v) {
    if (v === null || v === undefined) return "—";
    if (typeof v === "string") return v;
    if (Array.isArray(v) && v.every((x) => x === null || typeof x !== "object")) return v.join(", ");
    return JSON.stringify(v);
  }
  const clip = (s, n) => (s.length > n ? s.slice(0, n) + "…" : s);
  const pre = (s, cls) => h("pre", { class: cls || "text" }, s === null || s === undefined ? "" : String(s));
  const json = (v) => pre(JSON.stringify(v, null, 2), "text json");
  const section = (title, ...body) => h("section", { class: "part" }, h("h4", null, title), body);
  const fold = (title, ...body) => h("details", { class: "fold" }, h("summary", null, title), body);
  const chip = (label, cls) => h("span", { class: "chip " + (cls || "") }, label);

  function table(head, rows, cls) {
    return h("table", { class: cls || "grid" }, h("thead", null, h("tr", null, head.map((c) => h("th", null, c)))),
      h("tbody", null, rows.map((r) => h("tr", null, r.map((c) => h("td", null, c))))));
  }

  // ---------------------------------------------------------------- samples: classes, verdicts, search
  const OUTCOMES = ["correct", "partial", "wrong", "invalid", "error", "unscored"];
  function outcomeLabel(task, c) {
    const p = task.pairwise;
    if (!p) return c;
    return { correct: `${p.a} wins`, wrong: `${p.b} wins`, partial: "tie or split" }[c] || c;
  }
  const verdictOf = (j) => (j.status === "ok" ? String(j.verdict) : `[${j.status}]`);
  const verdictToken = (j) => [j.judge, j.rubric || "", verdictOf(j)].join(SEP);
  function verdictLabel(token) {
    const [judge, rubric, verdict] = token.split(SEP);
    return `${judge}${rubric ? " · " + rubric : ""}: ${verdict}`;
  }
  function prepare(task) {
    task._answers = task.samples.some((s) => s.answer !== null && s.answer !== undefined);
    for (const s of task.samples) {
      s._k = s.epoch ? `${s.id}#${s.epoch}` : String(s.id);
      const js = (s.judgements || []).filter((j) => j && typeof j === "object");
      s._v = js.map(verdictToken);
      const byRubric = {};
      for (const j of js) if (j.status === "ok") (byRubric[j.rubric || ""] ||= new Set()).add(String(j.verdict));
      s._d = Object.values(byRubric).some((set) => set.size > 1);
    }
  }
  function lastUser(prompt) {
    if (!Array.isArray(prompt)) return text(prompt);
    for (let i = prompt.length - 1; i >= 0; i--) if (prompt[i] && prompt[i].role === "user") return contentText(prompt[i].content);
    return "";
  }
  function contentText(c) {
    c = text(c);
    if (typeof c === "string") return c;
    if (Array.isArray(c)) return c.map((p) => (p && p.type === "text" ? text(p.text) : "")).join("\n");
    return c === null || c === undefined ? "" : JSON.stringify(c);
  }
  // What the text filter searches: built on the first search only, then kept.
  function haystack(s) {
    if (s._h === undefined) {
      const extra = s.extra || {};
      const parts = [s._k, lastUser(s.prompt), s.response, show(s.answer), show(s.reference), s.error,
        extra.response_a, extra.response_b];
      for (const j of s.judgements || []) if (j) parts.push(j.explanation, j.verdict);
      s._h = parts.filter((p) => typeof p === "string" && p).join("\n").toLowerCase();
    }
    return s._h;
  }
  const scoreOf = (task, s, key) => (key === task.score_key ? s._s : (s.scores || {})[key]);
  function byScore(task, key, dir) {
    return (a, b) => {
      const x = scoreOf(task, a, key), y = scoreOf(task, b, key);
      const nx = typeof x !== "number", ny = typeof y !== "number";
      if (nx || ny) return nx - ny; // samples without a score last, either way
      return dir * (x - y);
    };
  }

  // ---------------------------------------------------------------- a paginated table of rows
  // opts: rows() -> the filtered rows; key(row); cells(row) -> [cell]; head; detail(row) -> element
  function pagedTable(opts) {
    const st = { page: 0, size: 100, open: new Set() };
    const tbody = h("tbody");
    const count = h("span", { id: "f-count", class: "muted" });
    const prev = h("button", { id: "pager-prev", type: "button", onclick: () => { st.page--; draw(); } }, "‹ previous");
    const next = h("button", { id: "pager-next", type: "button", onclick: () => { st.page++; draw(); } }, "next ›");
    const size = h("select", { id: "f-size", onchange: () => { st.size = +size.value; st.page = 0; draw(); } },
      PAGE_SIZES.map((n) => h("option", { value: n, selected: n === st.size }, `${n} per page`)));
    let rows = [];
    function row(r) {
      const k = opts.key(r);
      const tr = h("tr", { class: "sample-row " + (r._c ? "o-" + r._c : ""), "data-id": k, tabindex: 0 },
        opts.cells(r).map((c) => h("td", null, c)));
      const toggle = () => { st.open.has(k) ? st.open.delete(k) : st.open.add(k); draw(); };
      tr.addEventListener("click", toggle);
      tr.addEventListener("keydown", (e) => { if (e.key === "Enter") toggle(); });
      const out = [tr];
      if (st.open.has(k)) {
        tr.classList.add("open");
        out.push(h("tr", { class: "detail-row" }, h("td", { colspan: opts.head.length }, opts.detail(r))));
      }
      return out;
    }
    function draw() {
      const pages = Math.max(1, Math.ceil(rows.length / st.size));
      st.page = Math.min(Math.max(0, st.page), pages - 1);
      const start = st.page * st.size, shown = rows.slice(start, start + st.size);
      tbody.replaceChildren(...shown.flatMap(row));
      count.textContent = rows.length
        ? `${start + 1}–${start + shown.length} of ${rows.length} (page ${st.page + 1} of ${pages})` : "no sample matches";
      prev.disabled = st.page === 0;
      next.disabled = st.page >= pages - 1;
      app.dataset.renders = String((+app.dataset.renders || 0) + 1);
    }
    function refresh(keepPage) {
      rows = opts.rows();
      if (!keepPage) st.page = 0;
      draw();
    }
    function reveal(k) { // open one row and turn to its page (deep links)
      const i = rows.findIndex((r) => opts.key(r) === k);
      if (i < 0) return false;
      st.open.add(k); st.page = Math.floor(i / st.size); draw();
      return true;
    }
    const el = h("div", { class: "paged" },
      h("table", { class: "grid samples" }, h("thead", null, h("tr", null, opts.head.map((c) => h("th", null, c)))), tbody),
      h("div", { class: "pager" }, prev, count, next, size));
    return { el, refresh, reveal };
  }

  function debounce(fn, ms) {
    let t = 0;
    return () => { clearTimeout(t); t = setTimeout(fn, ms); };
  }
  function textFilter(onchange) {
    const input = h("input", { id: "f-text", type: "search", placeholder: "search id, prompt, response, reference, explanations…", size: 40 });
    const later = debounce(onchange, 150);
    input.addEventListener("input", later);
    input.addEventListener("change", onchange);  // Enter or leaving the field: at once
    return input;
  }

  // ---------------------------------------------------------------- one sample in full
  function messageView(m) {
    if (!m || typeof m !== "object") return pre(show(m));
    const role = String(m.role || "message");
    const head = [chip(role, "role")];
    if (m.name) head.push(" ", String(m.name));
    if (m.tool_call_id) head.push(" ", chip(`reply to ${m.tool_call_id}`));
    const body = [];
    const content = text(m.content);
    if (typeof content === "string") body.push(pre(content));
    else if (Array.isArray(content)) {
      for (const p of content) {
        if (p && p.type === "text") body.push(pre(text(p.text)));
        else body.push(h("div", { class: "part-other" }, chip(String((p && p.type) || "part")), " ", JSON.stringify(p)));
      }
    } else if (content !== null && content !== undefined) body.push(json(content));
    for (const call of m.tool_calls || []) {
      const fn = call.function || call;
      body.push(h("div", { class: "tool-call" }, "→ ", h("code", null, String(fn.name)), " ", pre(show(text(fn.arguments)), "text args")));
    }
    return h("div", { class: "msg role-" + role.replace(/[^a-z]/g, "") }, h("div", { class: "msg-head" }, head), body);
  }
  // System messages, the few-shot turns folded, then the question (and anything after it).
  function messagesView(messages) {
    if (!Array.isArray(messages)) return pre(text(messages));
    let last = -1;
    for (let i = messages.length - 1; i >= 0; i--) if (messages[i] && messages[i].role === "user") { last = i; break; }
    let first = 0;
    while (first < messages.length && messages[first] && messages[first].role === "system") first++;
    const out = messages.slice(0, first).map(messageView);
    if (last > first) {
      const shots = messages.slice(first, last);
      const turns = shots.filter((m) => m && m.role === "user").length;
      out.push(fold(`${turns} few-shot turn${turns === 1 ? "" : "s"} (${shots.length} messages)`, shots.map(messageView)));
    }
    out.push(...messages.slice(Math.max(last, first)).map(messageView));
    return h("div", { class: "messages" }, out);
  }

  function judgeCard(j) {
    if (!j || typeof j !== "object") return pre(show(j));
    const head = [h("strong", null, String(j.judge))];
    if (j.rubric) head.push(" · ", String(j.rubric));
    head.push(" ", chip(verdictOf(j), j.status === "ok" ? "verdict" : "bad"));
    if (j.score !== null && j.score !== undefined) head.push(" ", chip(`score ${fmt(j.score)}`));
    if (j.shown_first) head.push(" ", chip(`shown first: ${j.shown_first}`));
    const body = [h("div", { class: "judge-head" }, head)];
    if (j.explanation) body.push(h("p", { class: "explanation" }, String(j.explanation)));
    const calls = Array.isArray(j.calls) ? j.calls : [];
    const perCall = calls.length > 1 || (calls.length === 1 && Boolean(calls[0].prompt));
    if (perCall) {  // each order its own row, with its own reply (and prompt, where recorded)
      body.push(table(["order", "shown first", "said", "verdict", "explanation"], calls.map((c, i) => [
        `call ${i + 1}`, String(c.shown_first), fmt(c.slot_verdict), c.status === "ok" ? fmt(c.verdict) : `[${c.status}]`,
        h("div", null, String(c.explanation || ""),
          c.prompt ? fold("prompt the judge saw", pre(text(c.prompt))) : null, fold("raw reply", pre(c.raw))),
      ])));
    }
    if (j.prompt && !perCall) body.push(fold("prompt the judge saw", pre(text(j.prompt))));
    if (j.raw && !perCall) body.push(fold("raw reply", pre(j.raw)));
    return h("div", { class: "judge " + (j.status === "ok" ? "" : "judge-bad") }, body);
  }

  function toolCalls(calls) {
    return table(["#", "tool", "arguments", "response"], calls.map((c, i) => {
      const resp = String(c.response === undefined ? "" : typeof c.response === "string" ? c.response : JSON.stringify(c.response));
      return [String(i + 1), h("span", null, h("code", null, String(c.name)), c.error ? chip("error", "bad") : null),
        pre(JSON.stringify(c.arguments), "text args"), resp.length > 400 ? fold(clip(resp, 120), pre(resp)) : pre(resp)];
    }), "grid calls");
  }
  function vakraParts(extra) {
    const out = [];
    for (const t of extra.per_turn || []) {
      const m = t.metadata || {};
      out.push(section(`Turn ${t.turn_id} (score ${fmt(t.score)})`,
        h("p", null, String(t.query || "")),
        table(["step", "explanation"], Object.entries(m.score_explanation || {}).map(([k, v]) => [k, String(v)]))));
    }
    const calls = extra.tool_calls;
    if (Array.isArray(calls)) out.push(section("Tool calls", toolCalls(calls)));
    else if (calls && typeof calls === "object") {
      if (Array.isArray(calls.prediction)) out.push(section("Tool calls (prediction, replayed)", toolCalls(calls.prediction)));
      // Named as the dialogue names its turns (per_turn's turn_id), so "Turn 0" above is "turn 0" here.
      const ids = (extra.per_turn || []).map((t) => t.turn_id);
      (calls.ground_truth || []).forEach((turn, i) => out.push(section(`Tool calls (ground truth, turn ${ids[i] ?? i})`, toolCalls(turn))));
    }
    if (Array.isArray(extra.ground_truth_tool_calls)) out.push(section("Tool calls (ground truth)", toolCalls(extra.ground_truth_tool_calls)));
    if (extra.agent && Array.isArray(extra.agent.messages)) {
      out.push(fold(`Agent conversation (${extra.agent.messages.length} messages, ${extra.agent.steps} steps)`,
        h("div", { class: "messages" }, extra.agent.messages.map(messageView))));
    }
    return out;
  }
  const SHOWN_EXTRA = ["per_turn", "tool_calls", "ground_truth_tool_calls", "agent", "response_a", "response_b"];

  function sampleDetail(task, s) {
    const extra = s.extra || {};
    const p = task.pairwise;
    const meta = [chip(`id ${s._k}`), " ", chip(outcomeLabel(task, s._c), "o-" + s._c), " ", chip(`status ${s.status}`)];
    if (s.model) meta.push(" ", chip(`model ${s.model}`));
    if (s.served_model && s.served_model !== s.model) meta.push(" ", chip(`served ${s.served_model}`));
    if (s.finish_reason === "length") meta.push(" ", chip("cut at max_tokens", "bad"));
    for (const [k, v] of Object.entries(s.scores || {})) meta.push(" ", chip(`${k} ${fmt(v)}`, "score"));
    const out = [h("div", { class: "meta" }, meta)];
    if (s.error) out.push(section("Error", pre(s.error, "text error")));
    out.push(section(Array.isArray(s.prompt) ? "Messages sent" : "Prompt", messagesView(s.prompt)));
    if (p) {
      out.push(h("div", { class: "two" }, section(`Response of ${p.a}`, pre(extra.response_a)),
        section(`Response of ${p.b}`, pre(extra.response_b))));
    } else {
      // The reasoning, folded above the reply it led to (readers and judges never saw it).
      if (typeof s.reasoning === "string" && s.reasoning) out.push(fold("reasoning (not read, not judged)", pre(s.reasoning)));
      out.push(section("Response", s.response === null || s.response === undefined
        ? h("p", { class: "muted" }, "no response") : pre(s.response)));
      out.push(task._answers ? h("div", { class: "two" }, section("Extracted answer", pre(show(s.answer))),
        section("Reference", pre(show(s.reference)))) : section("Reference", pre(show(s.reference))));
    }
    if (p && s.reference) out.push(section("Reference", pre(show(s.reference))));
    const judges = (s.judgements || []);
    if (judges.length) out.push(section(`Judges (${judges.length})`, judges.map(judgeCard)));
    out.push(...vakraParts(extra));
    const rest = Object.fromEntries(Object.entries(extra).filter(([k]) => !SHOWN_EXTRA.includes(k)));
    if (Object.keys(rest).length) out.push(fold("extra (task details)", json(rest)));
    if (s.usage && Object.keys(s.usage).length) out.push(fold("usage", json(s.usage)));
    if (s.fingerprint) out.push(fold("fingerprint", pre(s.fingerprint)));
    return h("div", { class: "detail" }, out);
  }

  // ---------------------------------------------------------------- a run
  function metricsTable(block) {
    const metrics = block.metrics || {}, ci = block.ci || {}, se = block.stderr || {};
    return table(["metric", "value", "95 % interval", "stderr"],
      Object.entries(metrics).map(([m, v]) => [m, h("span", { class: "num" }, fmt(v, 4)), fmtCI(ci[m]), fmt(se[m], 4)]));
  }
  function countsLine(task) {
    const b = task.block || {};
    const items = [`n ${fmt(b.n ?? task.samples.length)}`, `errors ${fmt(b.n_errors ?? 0)}`, `invalid ${fmt(b.n_invalid ?? 0)}`];
    if (b.n_truncated) items.push(`cut at max_tokens ${fmt(b.n_truncated)}`);
    const out = [h("p", { class: "counts" }, items.join(" · "))];
    if ((b.invalid_ids || []).length) out.push(h("p", { class: "muted" }, `invalid ids: ${b.invalid_ids.join(", ")}`));
    if ((b.error_ids || []).length) out.push(h("p", { class: "muted" }, `error ids: ${b.error_ids.join(", ")}`));
    if (b.epochs) out.push(h("p", { class: "muted" }, `epochs ${fmt(b.epochs)}`));
    if (b.data && typeof b.data === "object") {
      const d = b.data;
      out.push(h("p", { class: "muted" }, `data: ${fmt(d.source)}${d.revision ? " @ " + d.revision : ""} · ${fmt(d.rows)} rows` +
        (d.sha256 ? ` · sha256 ${String(d.sha256).slice(0, 12)}` : "")));
    }
    if (b.counts && Object.keys(b.counts).length) out.push(h("p", { class: "muted" }, Object.entries(b.counts).map(([k, v]) => `${k} ${v}`).join(" · ")));
    const js = b.judge_stats;
    if (js && typeof js === "object") {
      const rows = [["panel (Fleiss)", fmt(js.fleiss_kappa), fmtCI(js.fleiss_kappa_ci)]];
      for (const [pair, k] of Object.entries(js.cohen_kappa || {})) rows.push([`${pair} (Cohen)`, fmt(k), fmtCI((js.cohen_kappa_ci || {})[pair])]);
      out.push(h("h4", null, `Judge agreement (n ${fmt(js.n)})`), table(["judges", "kappa", "95 % interval"], rows));
      if (js.invalid_rate) out.push(h("p", { class: "muted" }, "invalid rate: " + Object.entries(js.invalid_rate).map(([k, v]) => `${k} ${fmt(v)}`).join(" · ")));
    }
    return out;
  }

  function sampleBrowser(task) {
    prepare(task);
    const counts = {};
    for (const s of task.samples) counts[s._c] = (counts[s._c] || 0) + 1;
    const status = h("select", { id: "f-status" }, h("option", { value: "" }, `any outcome (${task.samples.length})`),
      OUTCOMES.filter((c) => counts[c]).map((c) => h("option", { value: c }, `${outcomeLabel(task, c)} (${counts[c]})`)));
    const tokens = {};
    let disagree = 0;
    for (const s of task.samples) { for (const t of new Set(s._v)) tokens[t] = (tokens[t] || 0) + 1; if (s._d) disagree++; }
    const verdict = h("select", { id: "f-verdict", disabled: !Object.keys(tokens).length },
      h("option", { value: "" }, "any verdict"),
      disagree ? h("option", { value: DISAGREE }, `judges disagree (${disagree})`) : null,
      Object.keys(tokens).sort().map((t) => h("option", { value: t }, `${verdictLabel(t)} (${tokens[t]})`)));
    const keys = task.score_keys.includes(task.score_key) || task.score_key === "" ? task.score_keys : [task.score_key, ...task.score_keys];
    const keySel = h("select", { id: "f-key", title: "the score the sort uses" },
      task.score_key === "" && task.pairwise ? h("option", { value: "" }, `${task.pairwise.a}'s credit (mean over judges)`) : null,
      keys.map((k) => h("option", { value: k, selected: k === task.score_key }, k)));
    const cutCount = task.samples.filter((s) => s.finish_reason === "length").length;
    const cutSel = h("select", { id: "f-cut", disabled: !cutCount }, h("option", { value: "" }, "any ending"),
      cutCount ? h("option", { value: "length" }, `cut at max_tokens (${cutCount})`) : null,
      cutCount ? h("option", { value: "whole" }, `not cut (${task.samples.length - cutCount})`) : null);
    const sort = h("select", { id: "f-sort" }, h("option", { value: "id" }, "in id order"),
      h("option", { value: "asc" }, "score, lowest first"), h("option", { value: "desc" }, "score, highest first"));
    function rows() {
      const q = search.value.trim().toLowerCase();
      const c = status.value, v = verdict.value;
      const e = cutSel.value;
      let out = task.samples.filter((s) => (!c || s._c === c) && (!v || (v === DISAGREE ? s._d : s._v.includes(v)))
        && (!e || (e === "length") === (s.finish_reason === "length")) && (!q || haystack(s).includes(q)));
      if (sort.value !== "id") out = out.slice().sort(byScore(task, keySel.value, sort.value === "asc" ? 1 : -1));
      return out;
    }
    const search = textFilter(() => paged.refresh());
    const p = task.pairwise, judged = task.judges.length > 0;
    // Columns a task never fills (no answer read from an open reply, no reference) are left out.
    const answers = !p && task._answers;
    const references = !p && task.samples.some((s) => s.reference !== null && s.reference !== undefined);
    const head = ["id", "outcome", "score", ...(p ? ["question", `response of ${p.a}`, `response of ${p.b}`]
      : [...(answers ? ["answer"] : []), ...(references ? ["reference"] : []), "response"]), ...(judged ? ["judges"] : [])];
    const paged = pagedTable({
      head, rows, key: (s) => s._k,
      detail: (s) => h("div", null, h("a", { class: "permalink", href: `#${encodeURIComponent(task.name)}/${encodeURIComponent(s._k)}` },
        "link to this sample"), sampleDetail(task, s)),
      cells: (s) => {
        const extra = s.extra || {};
        const outcome = [chip(outcomeLabel(task, s._c), "o-" + s._c)];
        if (s.finish_reason === "length") outcome.push(" ", chip("cut", "bad"));
        const cells = [s._k, h("span", null, outcome), h("span", { class: "num" }, fmt(scoreOf(task, s, keySel.value)))];
        if (p) cells.push(clip(lastUser(s.prompt) || "", 100), clip(String(extra.response_a ?? "—"), 100), clip(String(extra.response_b ?? "—"), 100));
        else {
          if (answers) cells.push(clip(show(s.answer), 40));
          if (references) cells.push(clip(show(s.reference), 60));
          cells.push(clip(s.response === null || s.response === undefined ? "—" : String(s.response), 140));
        }
        if (judged) {
          cells.push((s.judgements || []).filter((j) => j && typeof j === "object").map((j) =>
            h("span", { class: "chip " + (j.status === "ok" ? "verdict" : "bad"), title: j.rubric || null },
              `${j.judge}${j.rubric ? "·" + j.rubric[0] : ""}: ${verdictOf(j)}`)));
        }
        return cells;
      },
    });
    for (const el of [status, verdict, cutSel, sort, keySel]) el.addEventListener("change", () => paged.refresh());
    const bar = h("div", { class: "filters" }, status, verdict, cutSel, search, sort, keySel);
    paged.refresh();
    return { el: h("div", null, bar, paged.el), paged };
  }

  function renderRun(d) {
    const r = d.run || {};
    const head = [h("h1", null, "runner · ", r.benchmark || "run", r.model ? ` · ${r.model}` : "")];
    const facts = [["run dir", r.dir], ["judges", (r.judges || []).join(", ") || "—"], ["started", r.started || "—"],
      ["duration", r.duration_s !== undefined && r.duration_s !== null ? `${fmt(r.duration_s, 1)} s` : "—"]];
    // The closing line's counts (docs/outputs.md "What is counted"): requests sent, and replies from the cache apart.
    if (r.totals) facts.push(["requests sent", fmt(r.totals.requests)],
      ["from the cache", fmt(r.totals.cached_requests ?? r.totals.cache_hits ?? 0)],
      ["cost", money(r.totals.cost_usd ?? r.totals.cost)]);
    if (r.stopped) facts.push(["stopped", r.stopped]);
    if (!r.has_results) facts.push(["results.json", "none yet: the samples files alone are shown"]);
    for (const b of r.banners || []) head.push(h("p", { class: "banner banner-" + b.kind, role: "note" }, b.text));
    head.push(h("dl", { class: "facts" }, facts.map(([k, v]) => [h("dt", null, k), h("dd", null, String(v))])));
    const summary = Object.entries(r.summary || {}).filter(([, v]) => v === null || typeof v !== "object");
    if (summary.length) head.push(h("p", { class: "summary" }, summary.map(([k, v]) => chip(`${k} ${fmt(v, 4)}`, "score")), " "));
    const tabs = h("nav", { class: "tabs" });
    const body = h("div", { class: "task" });
    const views = {};
    function select(name) {
      const task = d.tasks.find((t) => t.name === name) || d.tasks[0];
      for (const b of tabs.children) b.classList.toggle("active", b.dataset.task === task.name);
      if (!views[task.name]) {
        const browser = sampleBrowser(task);
        views[task.name] = { browser, el: h("div", null, h("h2", null, task.name), h("div", { class: "two" },
          h("div", null, metricsTable(task.block || {})), h("div", null, countsLine(task))), h("h3", null, "Samples"), browser.el) };
      }
      body.replaceChildren(views[task.name].el);
      return views[task.name];
    }
    for (const t of d.tasks) {
      const headline = Object.values((t.block || {}).metrics || {})[0];
      tabs.append(h("button", { type: "button", class: "task-tab", "data-task": t.name, onclick: () => select(t.name) },
        t.name, " ", h("span", { class: "muted" }, `${fmt(headline)} · n ${t.samples.length}`)));
    }
    app.replaceChildren(h("header", null, head), tabs, body);
    if (!d.tasks.length) { body.append(h("p", { class: "muted" }, "This run has no samples file.")); return; }
    // #task/sample-id opens that sample (links that say "look at this one").
    let hash = "";
    try { hash = decodeURIComponent(location.hash.slice(1)); } catch (e) { hash = ""; }
    const [want, key] = hash.split(/\/(.*)/s);
    const view = select(want);
    if (key) view.browser.paged.reveal(key);
  }

  // ---------------------------------------------------------------- a sweep
  function renderSweep(d) {
    const jobs = d.jobs || [];
    const demo = jobs.filter((j) => j.demo).map((j) => j.label);
    const stopped = jobs.filter((j) => j.stopped).map((j) => `${j.label} (${j.stopped})`);
    const notes = [];
    if (demo.length) notes.push(h("p", { class: "banner banner-demo", role: "note" }, `DEMO: ${demo.join(", ")} ran the embedded SmolLM2-135M model; their numbers show that the pipeline works, not what a model can do.`));
    if (stopped.length) notes.push(h("p", { class: "banner banner-stopped", role: "note" }, `Stopped before every sample was asked: ${stopped.join(", ")}.`));
    const out = [h("header", null, h("h1", null, "runner · sweep"), ...notes, h("dl", { class: "facts" },
      h("dt", null, "sweep dir"), h("dd", null, String(d.dir)), h("dt", null, "jobs"), h("dd", null, String(jobs.length))))];
    out.push(h("h2", null, "Jobs"), table(["job", "run dir", "benchmark", "model", "judges", "samples", "errors", "invalid", "model cost", "judge cost", "duration"],
      jobs.map((j) => [link(j.href, j.label), j.dir, fmt(j.benchmark), fmt(j.model), (j.judges || []).join(", "), fmt(j.n_samples),
        fmt(j.n_errors), fmt(j.n_invalid), money(j.model_cost), money(j.judge_cost), j.duration_s === null || j.duration_s === undefined ? "—" : `${fmt(j.duration_s, 1)} s`])));
    if ((d.failed || []).length) out.push(h("h2", null, "Failed jobs"), h("ul", null, d.failed.map((f) => h("li", null, f))));
    const cmp = d.comparison || { columns: [], rows: [] };
    out.push(h("h2", null, "Comparison"), h("p", { class: "muted" }, "Each task's metrics per job, with the 95 % interval from its results.json (as report/comparison.csv)."),
      table(["benchmark", "task", "metric", ...cmp.columns.map((c) => link(c.href, c.label))],
        cmp.rows.map((r) => [fmt(r.benchmark), r.task, r.metric, ...r.cells.map((c) => (c ? h("span", { class: "num" }, fmt(c.value), " ", h("span", { class: "muted" }, fmtCI([c.ci_low, c.ci_high]))) : ""))]),
        "grid comparison"));
    if ((d.pairs || []).length) {
      out.push(h("h2", null, "Paired differences"), h("p", { class: "muted" }, "From report/pairs.csv: model_a − model_b over the samples both have."),
        table(["task", "metric", "model a", "model b", "n", "difference", "95 % interval", "p", "test"],
          d.pairs.map((p) => [p.task, p.metric, p.model_a, p.model_b, fmt(p.n), fmt(p.diff), fmtCI([p.ci_low, p.ci_high]), fmt(p.p_value, 4), p.test || ""])));
    }
    if ((d.charts || []).length) {
      out.push(h("h2", null, "Charts"), h("div", { class: "charts" }, d.charts.filter((c) => /^data:image\/png;base64,/.test(c.src))
        .map((c) => h("figure", null, h("img", { src: c.src, alt: c.name }), h("figcaption", null, `report/${c.name}`)))));
    }
    app.replaceChildren(...out);
  }

  // ---------------------------------------------------------------- two runs
  function renderDiff(d) {
    const out = [h("header", null, h("h1", null, `runner · ${d.a.label} vs ${d.b.label}`),
      h("dl", { class: "facts" }, h("dt", null, "A"), h("dd", null, link(d.a.href, d.a.dir)), h("dt", null, "B"), h("dd", null, link(d.b.href, d.b.dir))),
      h("p", { class: "muted" }, "Samples paired by id whose score differs between the two runs, side by side."))];
    const tabs = h("nav", { class: "tabs" });
    const body = h("div", { class: "task" });
    out.push(table(["task", "score", "paired", "differ", `${d.a.label} higher`, `${d.b.label} higher`, "only in A", "only in B"],
      d.tasks.map((t) => [t.name, t.score_key || "credit", fmt(t.n_paired), fmt(t.pairs.length), fmt(t.a_better), fmt(t.b_better),
        fmt(t.only_a.length), fmt(t.only_b.length)])), tabs, body);
    const views = {};
    function select(t) {
      for (const b of tabs.children) b.classList.toggle("active", b.dataset.task === t.name);
      if (!views[t.name]) {
        const ta = { ...t, samples: t.pairs.map((p) => p.a) }, tb = { ...t, samples: t.pairs.map((p) => p.b) };
        prepare(ta); prepare(tb);
        const dir = h("select", { id: "f-status" }, h("option", { value: "" }, `any change (${t.pairs.length})`),
          h("option", { value: "a" }, `${d.a.label} higher (${t.a_better})`), h("option", { value: "b" }, `${d.b.label} higher (${t.b_better})`),
          h("option", { value: "status" }, "outcome changed to or from error/invalid"));
        const sort = h("select", { id: "f-sort" }, h("option", { value: "id" }, "in id order"), h("option", { value: "delta" }, "largest change first"));
        const rows = () => {
          const q = search.value.trim().toLowerCase();
          let r = t.pairs.filter((p) => (!dir.value || (dir.value === "a" ? p.delta > 0 : dir.value === "b" ? p.delta < 0
            : p.a._c !== p.b._c && [p.a._c, p.b._c].some((c) => c === "error" || c === "invalid")))
            && (!q || haystack(p.a).includes(q) || haystack(p.b).includes(q)));
          if (sort.value === "delta") r = r.slice().sort((x, y) => Math.abs(y.delta ?? 2) - Math.abs(x.delta ?? 2));
          return r;
        };
        const search = textFilter(() => paged.refresh());
        const paged = pagedTable({
          head: ["id", `${d.a.label}`, `${d.b.label}`, "change", `response (${d.a.label})`, `response (${d.b.label})`],
          rows, key: (p) => p.a._k,
          cells: (p) => [p.a._k, h("span", null, chip(outcomeLabel(t, p.a._c), "o-" + p.a._c), " ", fmt(p.a._s)),
            h("span", null, chip(outcomeLabel(t, p.b._c), "o-" + p.b._c), " ", fmt(p.b._s)),
            h("span", { class: "num" }, p.delta === null ? "≠" : (p.delta > 0 ? "+" : "") + fmt(p.delta)),
            clip(String(p.a.response ?? "—"), 100), clip(String(p.b.response ?? "—"), 100)],
          detail: (p) => h("div", { class: "two" }, h("div", null, h("h4", { class: "side" }, d.a.label), sampleDetail(ta, p.a)),
            h("div", null, h("h4", { class: "side" }, d.b.label), sampleDetail(tb, p.b))),
        });
        for (const el of [dir, sort]) el.addEventListener("change", () => paged.refresh());
        paged.refresh();
        const only = [];
        if (t.only_a.length) only.push(h("p", { class: "muted" }, `only in ${d.a.label}: ${t.only_a.join(", ")}`));
        if (t.only_b.length) only.push(h("p", { class: "muted" }, `only in ${d.b.label}: ${t.only_b.join(", ")}`));
        views[t.name] = h("div", null, h("h2", null, t.name), only, h("div", { class: "filters" }, dir, search, sort), paged.el);
      }
      body.replaceChildren(views[t.name]);
    }
    for (const t of d.tasks) {
      tabs.append(h("button", { type: "button", class: "task-tab", "data-task": t.name, onclick: () => select(t) },
        t.name, " ", h("span", { class: "muted" }, `${t.pairs.length} differ`)));
    }
    app.replaceChildren(...out);
    if (d.tasks.length) select(d.tasks[0]);
    else body.append(h("p", { class: "muted" }, "The two runs have no task in common."));
  }

  const renderers = { run: renderRun, sweep: renderSweep, diff: renderDiff };
  (renderers[DATA.kind] || (() => app.replaceChildren(h("p", null, "Unknown page kind."))))(DATA);
  // For tests and bench/bench_view.py: when the page became usable, and what parsing its data cost.
  document.body.dataset.parseMs = String(Math.round(parseMs));
  document.body.dataset.readyMs = String(Math.round(performance.now()));
  document.body.dataset.ready = "1";
})();
