// ieqa studio: confirm step, keyboard shortcuts, slider read-outs, drag-and-drop ranking.
// The pages work without it (plain forms); this only adds comfort and the confirm step.
(function () {
  "use strict";
  const form = document.getElementById("task-form");
  document.body.dataset.ready = "1";  // tests wait for this before pressing keys
  if (!form) return;
  const protocol = form.dataset.protocol;
  const confirmBox = document.getElementById("confirm");
  const summary = document.getElementById("confirm-summary");
  const okButton = document.getElementById("confirm-ok");
  const backButton = document.getElementById("confirm-back");
  const sliders = Array.from(form.querySelectorAll("input.slider"));
  let sending = false;

  // ---- sliders: live value, "not moved" marker, arrow keys in coarse steps
  sliders.forEach(function (s) {
    const out = form.querySelector('output[for="' + s.id + '"]');
    s.classList.add("untouched");
    const show = function () { if (out) out.textContent = Number(s.value).toFixed(2); s.classList.remove("untouched"); };
    s.addEventListener("input", show);
    s.addEventListener("change", show);
    s.addEventListener("keydown", function (ev) {
      if (ev.key !== "ArrowLeft" && ev.key !== "ArrowRight") return;
      ev.preventDefault();
      const lo = Number(s.min), hi = Number(s.max);
      const step = (hi - lo) / (ev.shiftKey ? 4 : 20) * (ev.key === "ArrowLeft" ? -1 : 1);
      s.value = String(Math.min(hi, Math.max(lo, Number(s.value) + step)));
      show();
    });
  });

  // ---- ranking: HTML5 drag and drop plus up/down buttons; the hidden field holds the order
  function syncRanking(list) {
    const field = document.getElementById("dim__" + list.dataset.dim);
    field.value = Array.from(list.querySelectorAll(".rank-item")).map(function (li) { return li.dataset.slot; }).join(",");
  }
  document.querySelectorAll(".rank-list").forEach(function (list) {
    let dragged = null;
    list.addEventListener("dragstart", function (ev) {
      dragged = ev.target.closest(".rank-item");
      if (!dragged) return;
      dragged.classList.add("dragging");
      ev.dataTransfer.effectAllowed = "move";
      ev.dataTransfer.setData("text/plain", dragged.dataset.slot);
    });
    list.addEventListener("dragend", function () {
      if (dragged) dragged.classList.remove("dragging");
      dragged = null;
      syncRanking(list);
    });
    list.addEventListener("dragover", function (ev) {
      if (!dragged) return;
      ev.preventDefault();
      const over = ev.target.closest(".rank-item");
      if (!over || over === dragged) return;
      const box = over.getBoundingClientRect();
      const after = ev.clientY > box.top + box.height / 2;
      list.insertBefore(dragged, after ? over.nextSibling : over);
    });
    list.addEventListener("drop", function (ev) { ev.preventDefault(); syncRanking(list); });
    list.addEventListener("click", function (ev) {
      const btn = ev.target.closest("button");
      if (!btn) return;
      const li = btn.closest(".rank-item");
      if (btn.classList.contains("up") && li.previousElementSibling) list.insertBefore(li, li.previousElementSibling);
      if (btn.classList.contains("down") && li.nextElementSibling) list.insertBefore(li.nextElementSibling, li);
      syncRanking(list);
      btn.focus();
    });
  });

  // ---- confirm step
  function describe() {
    const items = [];
    if (protocol === "rate" || protocol === "critique") {
      sliders.forEach(function (s) {
        items.push(s.dataset.label + ": " + Number(s.value).toFixed(2) + (s.classList.contains("untouched") ? " (not moved)" : ""));
      });
    } else if (protocol === "rank") {
      document.querySelectorAll(".rank-list").forEach(function (list) {
        const names = Array.from(list.querySelectorAll(".rank-item")).map(function (li) { return li.dataset.label; });
        items.push(list.dataset.dim.replace(/_/g, " ") + ": " + names.join(" > "));
      });
    } else {
      form.querySelectorAll("fieldset.verdict").forEach(function (fs) {
        const c = fs.querySelector("input:checked");
        items.push(fs.dataset.dim.replace(/_/g, " ") + ": " + (c ? c.dataset.text : "(no answer)"));
      });
    }
    summary.replaceChildren();
    items.forEach(function (t) { const li = document.createElement("li"); li.textContent = t; summary.appendChild(li); });
  }
  function openConfirm() { describe(); confirmBox.hidden = false; okButton.focus(); }
  function closeConfirm() { confirmBox.hidden = true; }
  form.addEventListener("submit", function (ev) {
    if (sending) { ev.preventDefault(); return; }
    if (confirmBox.hidden) { ev.preventDefault(); openConfirm(); }
  });
  okButton.addEventListener("click", function () {
    if (sending) return;
    sending = true;
    okButton.disabled = true;
    HTMLFormElement.prototype.submit.call(form);  // immune to a control named "submit"
  });
  backButton.addEventListener("click", closeConfirm);

  // ---- keyboard shortcuts
  document.addEventListener("keydown", function (ev) {
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    if (!confirmBox.hidden) {
      if (ev.key === "Escape") { ev.preventDefault(); closeConfirm(); }
      else if (ev.key === "Enter" && ev.target !== backButton) { ev.preventDefault(); okButton.click(); }
      return;  // Enter on the focused Back button goes back (its own click)
    }
    if (ev.key === "Enter" && !(ev.target instanceof HTMLButtonElement) && !(ev.target instanceof HTMLAnchorElement)) {
      ev.preventDefault();
      if (form.reportValidity()) openConfirm();
      return;
    }
    if (ev.key === "p" || ev.key === "P") { document.getElementById("pause").click(); return; }
    if (/^[1-9]$/.test(ev.key) && sliders.length) {
      const s = sliders[Number(ev.key) - 1];
      if (s) { ev.preventDefault(); s.focus(); }
      return;
    }
    if (protocol === "pairwise") {
      const key = ev.key.toLowerCase();
      const sets = Array.from(form.querySelectorAll("fieldset.verdict"));
      const focused = document.activeElement && document.activeElement.closest("fieldset.verdict");
      // the first unanswered question; once all are answered, the focused one (to change it)
      const target = sets.find(function (fs) { return !fs.querySelector("input:checked"); }) || focused || sets[sets.length - 1];
      const radio = target && target.querySelector('input[data-key="' + key + '"]');
      if (radio) { ev.preventDefault(); radio.checked = true; radio.focus(); }
    }
  });
})();
