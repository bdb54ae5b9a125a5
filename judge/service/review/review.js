// The review page: a client of the JSON API under /api/. Case text is only ever set with
// textContent, never parsed as HTML.
"use strict";

const state = {
  queue: [],
  position: 0,
  current: null,
  filters: {},
  token: null,
};

const MENUS = {
  selection: ["correct", "incorrect"],
  arguments: ["correct", "incorrect", "not_applicable"],
  answer: ["correct", "incorrect"],
};
// The keys 1 to 7, one per label in the order of the menus: "1" -> ["selection", "correct"].
const KEYS = Object.fromEntries(
  Object.entries(MENUS)
    .flatMap(([dimension, menu]) => menu.map((value) => [dimension, value]))
    .map((label, index) => [String(index + 1), label]),
);
const STORE = "judge-review:";

// --- the API ----------------------------------------------------------------------------

async function api(method, path, body, headers) {
  const sent = Object.assign({}, headers || {});
  if (state.token) sent["Authorization"] = "Bearer " + state.token;
  const reviewer = byId("reviewer").value.trim();
  if (reviewer) sent["X-Judge-Reviewer"] = reviewer;
  const init = { method: method, headers: sent };
  if (body !== undefined) {
    sent["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 401) {
    const given = window.prompt("This review needs its token (JUDGE_SERVICE_TOKEN):");
    if (given) {
      state.token = given.trim();
      sessionStorage.setItem(STORE + "token", state.token);
      return api(method, path, body, headers);
    }
  }
  let data = null;
  try {
    data = await response.json();
  } catch (error) {
    data = null;
  }
  if (!response.ok) {
    const detail = data && data.detail ? data.detail : response.statusText;
    throw new Error(typeof detail === "string" ? detail : JSON.stringify(detail));
  }
  return data;
}

// --- small DOM helpers ------------------------------------------------------------------

function byId(id) {
  return document.getElementById(id);
}

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function json(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function percent(value) {
  return value === null || value === undefined ? "n/a" : value.toFixed(2);
}

function showError(message) {
  const banner = byId("banner");
  banner.hidden = false;
  banner.className = "error";
  banner.textContent = message;
}

function showNotice(message) {
  const banner = byId("banner");
  banner.hidden = false;
  banner.className = "notice";
  banner.textContent = message;
}

// --- the queue --------------------------------------------------------------------------

async function loadQueue(keepId) {
  const query = new URLSearchParams(state.filters).toString();
  const found = await api("GET", "/api/queue" + (query ? "?" + query : ""));
  state.queue = found.cases;
  renderProgress(found.progress);
  renderFilters(found.progress.strata);
  const index = state.queue.findIndex((item) => item.id === keepId);
  state.position = index >= 0 ? index : 0;
  renderQueue();
  if (state.queue.length) await showCase(state.position);
  else byId("case").replaceChildren(el("p", { class: "empty" }, "No case matches the filters."));
}

function renderProgress(progress) {
  const bar = el("progress", { max: progress.total, value: progress.labelled });
  byId("progress").replaceChildren(
    bar,
    el("span", { id: "progress-text" }, `${progress.labelled} / ${progress.total} labelled`),
  );
}

function renderFilters(strata) {
  const box = byId("filters");
  box.replaceChildren();
  for (const [name, values] of Object.entries(strata)) {
    const select = el("select", { "data-filter": name, "aria-label": name });
    select.append(el("option", { value: "" }, `${name}: all`));
    for (const [value, counts] of Object.entries(values)) {
      const option = el("option", { value: value }, `${value} (${counts.labelled}/${counts.total})`);
      if (state.filters[name] === value) option.selected = true;
      select.append(option);
    }
    select.addEventListener("change", () => {
      if (select.value) state.filters[name] = select.value;
      else delete state.filters[name];
      loadQueue(null).catch((error) => showError(error.message));
    });
    box.append(el("label", { class: "filter" }, select));
  }
}

function renderQueue() {
  const list = byId("queue");
  list.replaceChildren();
  state.queue.forEach((item, index) => {
    const entry = el(
      "li",
      {
        class: `${item.group} ${item.state}` + (index === state.position ? " current" : ""),
        title: item.reason,
        "data-id": item.id,
      },
      el("span", { class: "dot" }),
      item.id,
    );
    entry.addEventListener("click", () => showCase(index).catch((e) => showError(e.message)));
    list.append(entry);
  });
  const current = list.children[state.position];
  if (current) current.scrollIntoView({ block: "nearest" });
}

async function move(step) {
  if (!state.queue.length) return;
  const next = Math.min(Math.max(state.position + step, 0), state.queue.length - 1);
  if (next !== state.position) await showCase(next);
}

// --- one case ---------------------------------------------------------------------------

async function showCase(index) {
  state.position = index;
  state.current = null; // no key labels a case while the next one loads
  const item = state.queue[index];
  const found = await api("GET", "/api/cases/" + encodeURIComponent(item.id));
  if (state.position !== index) return; // moved on meanwhile: that one is shown instead
  state.current = found;
  sessionStorage.setItem(STORE + "current", found.id);
  renderQueue();
  renderCase(found);
}

function renderCase(found) {
  const section = byId("case");
  section.replaceChildren(
    el("h2", { id: "case-id" }, found.id),
    el("p", { class: `reason ${found.group}` }, `${found.group}: ${found.reason}`),
    el("p", { class: "meta" }, `line ${found.line} · ${state.position + 1} of ${state.queue.length}`),
    labelForm(found),
    block("Conversation", conversation(found.conversation)),
    block("Tools offered", tools(found.tools)),
    block("The response", response(found)),
    block("Structural findings", findings(found)),
    block("The judge", verdicts(found.judge)),
    expected(found),
  );
}

function block(title, body) {
  return el("div", { class: "block" }, el("h3", {}, title), body);
}

function conversation(messages) {
  const list = el("ol", { class: "messages" });
  for (const message of messages) {
    const item = el("li", { class: "message " + message.role }, el("span", { class: "role" }, message.role));
    if (message.content !== null && message.content !== undefined && message.content !== "") {
      item.append(el("div", { class: "text" }, json(message.content)));
    }
    if (message.tool_calls) item.append(el("pre", { class: "calls" }, json(message.tool_calls)));
    list.append(item);
  }
  return list;
}

function tools(offered) {
  const box = el("div", { class: "tools" });
  for (const tool of offered) {
    box.append(
      el(
        "details",
        {},
        el("summary", {}, el("code", {}, tool.name), " ", tool.description || ""),
        el("pre", {}, json(tool.parameters)),
      ),
    );
  }
  if (!offered.length) box.append(el("p", { class: "empty" }, "(no tool offered)"));
  return box;
}

function response(found) {
  const box = el("div", { class: "response" });
  if (found.response_text) box.append(el("div", { class: "text final" }, found.response_text));
  for (const call of found.calls) {
    box.append(
      el("div", { class: "call" }, el("span", { class: "index" }, `#${call.index}`), " ",
        el("code", {}, call.name), el("pre", {}, json(call.arguments))),
    );
  }
  if (!found.calls.length) box.append(el("p", { class: "empty" }, "(no tool call)"));
  return box;
}

function findings(found) {
  const list = el("ul", { class: "findings" });
  for (const failure of found.checks.failures) {
    const at = failure.call === null ? "" : `call #${failure.call} `;
    list.append(el("li", {}, el("code", {}, failure.kind), ` ${at}${failure.path} ${failure.message}`));
  }
  for (const value of found.ungrounded) {
    list.append(el("li", { class: "ungrounded" }, "ungrounded: ", json(value)));
  }
  if (!list.children.length) list.append(el("li", { class: "empty" }, "none"));
  return list;
}

function verdicts(judged) {
  if (!judged) return el("p", { class: "empty" }, "(no results given, or none for this case)");
  const box = el("div", { class: "verdicts" }, el("p", {}, `status: ${judged.status}`));
  if (judged.error) box.append(el("p", { class: "error" }, judged.error));
  const one = (title, verdict) => {
    if (!verdict) return;
    const confidence = verdict.confidence === null
      ? "no confidence"
      : `confidence ${verdict.confidence.toFixed(2)} (${verdict.confidence_source})`;
    box.append(
      el("div", { class: `verdict ${verdict.verdict}`, "data-dimension": title },
        el("strong", {}, title), " ", el("span", { class: "label" }, verdict.verdict),
        verdict.category ? ` · ${verdict.category}` : "",
        ` · ${confidence}`,
        verdict.problems && verdict.problems.length ? ` · ${verdict.problems.join(", ")}` : "",
        el("p", { class: "reasoning" }, verdict.reasoning)),
    );
  };
  one("selection", judged.selection);
  for (const argument of judged.arguments || []) one(`arguments (call #${argument.call})`, argument);
  one("trajectory", judged.trajectory);
  one("answer", judged.answer);
  if (judged.flip_rate) box.append(el("p", {}, `flip rate ${judged.flip_rate} over ${judged.samples} samples`));
  return box;
}

function expected(found) {
  if (found.expected_calls === null && !found.expected_behavior && !found.expected_answer) return null;
  const body = el("div", {});
  if (found.expected_behavior) body.append(el("p", {}, `expected behaviour: ${found.expected_behavior}`));
  if (found.expected_calls !== null) body.append(el("pre", {}, json(found.expected_calls)));
  if (found.expected_answer) body.append(el("p", {}, `expected answer: ${found.expected_answer}`));
  return el("details", { class: "block" }, el("summary", {}, "What the case expected"), body);
}

// --- labels -----------------------------------------------------------------------------

function labelForm(found) {
  const form = el("form", { id: "label-form", class: "labels" });
  form.addEventListener("submit", (event) => event.preventDefault());
  const keyOf = (dimension, value) =>
    Object.keys(KEYS).find((k) => KEYS[k][0] === dimension && KEYS[k][1] === value);
  for (const [dimension, menu] of Object.entries(MENUS)) {
    const needed = found.needs[dimension];
    const shown = needed || (dimension === "arguments" && found.labels.arguments);
    if (!shown) continue;
    const group = el("fieldset", { "data-dimension": dimension }, el("legend", {}, dimension));
    for (const value of menu) {
      const input = el("input", {
        type: "radio",
        name: dimension,
        value: value,
        checked: found.labels[dimension] === value,
      });
      input.addEventListener("change", () => setLabel(dimension, value));
      group.append(el("label", {}, input, ` ${value.replace("_", " ")} `, el("kbd", {}, keyOf(dimension, value))));
    }
    form.append(group);
  }
  const note = el("textarea", { id: "note", rows: 2, placeholder: "note (n)" });
  note.value = found.note || "";
  note.addEventListener("change", () => setNote(note.value));
  form.append(el("label", { class: "note" }, note));
  const who = found.reviewer ? `labelled by ${found.reviewer} at ${found.labelled_at}` : "";
  form.append(el("p", { id: "label-state", class: found.state }, `${found.state} ${who}`.trim()));
  return form;
}

async function write(changes) {
  const found = state.current;
  if (!found) return;
  const written = await api("PUT", "/api/labels/" + encodeURIComponent(found.id), changes, {
    "If-Match": `"${found.revision}"`,
  });
  found.labels = written.labels;
  found.note = written.note;
  found.revision = written.revision;
  found.state = written.state;
  // The reviewer may have moved on while it was written: mark the case by its id, and
  // draw it again only if it is still the one on screen.
  const entry = state.queue.find((item) => item.id === found.id);
  if (entry) entry.state = written.state;
  if (written.conflict) {
    showNotice(`${found.id}: ${written.conflict.message} (they had: ${JSON.stringify(written.conflict.replaced)})`);
  } else {
    byId("banner").hidden = true;
  }
  if (state.current === found) renderCase(found);
  renderQueue();
  await Promise.all([refreshProgress(), loadAgreement(), loadAlignment()]);
}

function setLabel(dimension, value) {
  const found = state.current;
  if (!found) return;
  const allowed = found.needs[dimension] || (dimension === "arguments" && value === "not_applicable");
  if (!allowed) {
    showNotice(`this case has no ${dimension} to label`);
    return;
  }
  write({ [dimension]: value }).catch((error) => showError(error.message));
}

function setNote(text) {
  write({ note: text }).catch((error) => showError(error.message));
}

async function refreshProgress() {
  const query = new URLSearchParams(state.filters).toString();
  const found = await api("GET", "/api/queue" + (query ? "?" + query : ""));
  renderProgress(found.progress);
}

// --- agreement --------------------------------------------------------------------------

async function loadAgreement() {
  const found = await api("GET", "/api/agreement");
  const box = byId("agreement");
  box.replaceChildren();
  if (!found.judged) {
    box.append(el("p", { class: "empty" }, "No judge results: start judge review with --results."));
  }
  for (const [dimension, stats] of Object.entries(found.dimensions)) {
    const interval = stats.ci_low === null ? "n/a" : `[${percent(stats.ci_low)}, ${percent(stats.ci_high)}]`;
    const [[cc, ci], [ic, ii]] = stats.confusion.matrix;
    const table = el(
      "table",
      { class: "confusion" },
      el("tr", {}, el("th", {}, "label \\ judge"), el("th", {}, "correct"), el("th", {}, "incorrect")),
      el("tr", {}, el("th", {}, "correct"), el("td", {}, cc), el("td", {}, ci)),
      el("tr", {}, el("th", {}, "incorrect"), el("td", {}, ic), el("td", {}, ii)),
    );
    box.append(
      el("div", { class: "dimension", "data-dimension": dimension },
        el("h3", {}, dimension),
        el("p", {}, "kappa ", el("strong", { class: "kappa" }, percent(stats.kappa)), ` ${interval} · n ${stats.n}`),
        stats.degenerate ? el("p", { class: "hint" }, stats.degenerate) : null,
        table),
    );
  }
  byId("record-button").disabled = !found.record.writable;
  byId("record-button").title = found.record.reason || `writes ${found.record.path}`;
  if (!found.record.writable) byId("record-message").textContent = found.record.reason;
}

async function writeRecord() {
  const message = byId("record-message");
  try {
    const written = await api("POST", "/api/calibration");
    message.textContent = `wrote ${written.path}: ${written.passed ? "passed" : "not passed"}`;
  } catch (error) {
    message.textContent = error.message;
  }
}

// --- the keyboard -----------------------------------------------------------------------

function onKey(event) {
  const target = event.target;
  if (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type === "text")) {
    if (event.key === "Escape") target.blur();
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const run = (promise) => promise.catch((error) => showError(error.message));
  if (KEYS[event.key]) {
    event.preventDefault();
    setLabel(...KEYS[event.key]);
  } else if (event.key === "j" || event.key === "ArrowRight") {
    event.preventDefault();
    run(move(1));
  } else if (event.key === "k" || event.key === "ArrowLeft") {
    event.preventDefault();
    run(move(-1));
  } else if (event.key === "n") {
    event.preventDefault();
    const note = byId("note");
    if (note) note.focus();
  } else if (event.key === "?") {
    byId("help").hidden = !byId("help").hidden;
  }
}

// --- start ------------------------------------------------------------------------------

async function start() {
  const hash = new URLSearchParams(window.location.hash.slice(1));
  if (hash.get("token")) {
    sessionStorage.setItem(STORE + "token", hash.get("token"));
    history.replaceState(null, "", window.location.pathname);
  }
  state.token = sessionStorage.getItem(STORE + "token");
  const reviewer = byId("reviewer");
  reviewer.value = localStorage.getItem(STORE + "reviewer") || "";
  reviewer.addEventListener("change", () => localStorage.setItem(STORE + "reviewer", reviewer.value.trim()));
  byId("help-button").addEventListener("click", () => (byId("help").hidden = !byId("help").hidden));
  byId("record-button").addEventListener("click", () => writeRecord());
  document.addEventListener("keydown", onKey);
  try {
    await loadQueue(sessionStorage.getItem(STORE + "current"));
    await loadAgreement();
  } catch (error) {
    showError(error.message);
  }
}

start();
