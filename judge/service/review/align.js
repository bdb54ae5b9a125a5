// The review page's align action (loaded after review.js, whose helpers it uses): the button
// is enabled once a dimension has the labels `judge align` needs; a run shows, per
// dimension, the held-out kappa before and after with their intervals, and the choice.
"use strict";

function interval(held) {
  if (!held || held.ci_low === null || held.ci_low === undefined) return "n/a";
  return `[${percent(held.ci_low)}, ${percent(held.ci_high)}]`;
}

function renderAlignment(found) {
  const box = byId("alignment");
  box.replaceChildren();
  if (!found) return;
  for (const [dimension, fit] of Object.entries(found.dimensions)) {
    const before = fit.before || {};
    const after = fit.after || {};
    box.append(
      el("div", { class: "dimension", "data-dimension": dimension },
        el("h3", {}, `${dimension} (${fit.labels} labels)`),
        el("p", {}, "before ", el("strong", { class: "before" }, percent(before.kappa)),
          el("span", { class: "before-interval" }, ` ${interval(before)}`), ` · n ${before.n}`),
        el("p", {}, "after ", el("strong", { class: "after" }, percent(after.kappa)),
          el("span", { class: "after-interval" }, ` ${interval(after)}`), ` · n ${after.n}`),
        el("p", {}, "choice ", el("span", { class: "choice" }, fit.choice)),
        el("p", { class: "hint why" }, fit.why)),
    );
  }
  for (const [dimension, count] of Object.entries(found.left_base || {})) {
    box.append(el("p", { class: "hint", "data-left-base": dimension },
      `${dimension}: left base, ${count} labels (fewer than needed)`));
  }
  box.append(el("p", { class: "hint", id: "align-path" }, `wrote ${found.path}`));
}

async function loadAlignment() {
  const found = await api("GET", "/api/align");
  const button = byId("align-button");
  button.disabled = !found.ready || found.running;
  button.title = found.reason || `writes ${found.path}`;
  const message = byId("align-message");
  if (found.running) {
    message.className = "";
    message.textContent = "aligning…";
  } else if (!found.ready) {
    message.className = "";
    message.textContent = found.reason;
  } else if (message.textContent === "" || message.dataset.kind === "reason") {
    message.textContent = "";
  }
  message.dataset.kind = found.ready ? "" : "reason";
  if (found.last && !byId("alignment").childElementCount) renderAlignment(found.last);
}

async function align() {
  const button = byId("align-button");
  const message = byId("align-message");
  button.disabled = true;
  message.className = "";
  message.dataset.kind = "";
  message.textContent = "aligning… (the judge grades every held-out fold)";
  try {
    const found = await api("POST", "/api/align");
    renderAlignment(found);
    message.textContent = "aligned";
  } catch (error) {
    message.className = "error";
    message.textContent = error.message;
  } finally {
    await loadAlignment().catch((error) => showError(error.message));
  }
}

byId("align-button").addEventListener("click", () => align());
loadAlignment().catch((error) => showError(error.message));
