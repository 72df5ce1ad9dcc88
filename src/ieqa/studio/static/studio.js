// ieqa studio: confirm step, keyboard shortcuts, slider read-outs, ranking by drag (mouse:
// drag and drop; touch: drag the handle) or buttons, zoom and pan of the images (synced
// panes), the guidelines overlay. The pages work without it (plain forms); this adds
// comfort, the confirm step and the "moved" field (which sliders and rankings the rater set).
(function () {
  "use strict";
  document.body.dataset.ready = "1";  // tests wait for this before pressing keys
  const guide = document.getElementById("guide");
  const zoom = document.getElementById("zoom");

  // ---- guidelines overlay (G, or the header button)
  function toggleGuide(show) {
    if (!guide) return;
    guide.hidden = show === undefined ? !guide.hidden : !show;
    if (!guide.hidden) document.getElementById("guide-close").focus();
  }
  document.querySelectorAll("[data-open-guide]").forEach(function (b) {
    b.addEventListener("click", function () { toggleGuide(true); });
  });
  const guideClose = document.getElementById("guide-close");
  if (guideClose) guideClose.addEventListener("click", function () { toggleGuide(false); });

  // ---- zoom: every image opens a full-screen view of the page's images (rate, critique,
  // pairwise: all of them side by side; rank: the source and the candidate tapped), with
  // one zoom and pan for all panes: wheel or +/- to zoom, drag to pan, pinch on touch
  const view = { s: 1, x: 0, y: 0 };
  let panes = [];
  function applyView() {
    panes.forEach(function (p) {
      const img = p.querySelector("img");
      img.style.transform = "translate(" + view.x + "px," + view.y + "px) scale(" + view.s + ")";
    });
    const level = document.getElementById("zoom-level");
    if (level) level.textContent = Math.round(view.s * 100) + "%";
  }
  function fit() {
    // the scale at which the largest image fits its pane, centred
    let s = Infinity;
    panes.forEach(function (p) {
      const img = p.querySelector("img");
      const w = img.naturalWidth || 1, h = img.naturalHeight || 1;
      s = Math.min(s, p.clientWidth / w, p.clientHeight / h);
    });
    if (!isFinite(s) || s <= 0) s = 1;
    const p = panes[0], img = p.querySelector("img");
    view.s = s;
    view.x = (p.clientWidth - (img.naturalWidth || 1) * s) / 2;
    view.y = (p.clientHeight - (img.naturalHeight || 1) * s) / 2;
    applyView();
  }
  function zoomAt(factor, cx, cy) {
    const s = Math.min(40, Math.max(0.05, view.s * factor));
    view.x = cx - (cx - view.x) * (s / view.s);
    view.y = cy - (cy - view.y) * (s / view.s);
    view.s = s;
    applyView();
  }
  function openZoom(figure) {
    if (!zoom) return;
    const group = figure.closest("[data-zoom-group]");
    let figs = group ? Array.from(group.querySelectorAll("figure.shot")) : [figure];
    const extra = figure.closest("[data-zoom-with]");
    if (extra) {
      const src = document.querySelector(extra.dataset.zoomWith);
      figs = src ? [src, figure] : [figure];
    }
    const box = document.getElementById("zoom-panes");
    box.replaceChildren();
    panes = figs.map(function (f) {
      const pane = document.createElement("div");
      pane.className = "zoom-pane";
      const label = document.createElement("span");
      label.className = "label";
      label.textContent = f.dataset.caption || "";
      const img = document.createElement("img");
      img.src = f.querySelector("img").getAttribute("src");
      img.alt = f.dataset.caption || "";
      img.draggable = false;
      pane.appendChild(label);
      pane.appendChild(img);
      box.appendChild(pane);
      return pane;
    });
    zoom.hidden = false;
    let pending = panes.length;
    panes.forEach(function (p) {
      const img = p.querySelector("img");
      const done = function () { if (--pending === 0) fit(); };
      if (img.complete && img.naturalWidth) done(); else { img.addEventListener("load", done); img.addEventListener("error", done); }
    });
    document.getElementById("zoom-close").focus();
  }
  function closeZoom() { if (zoom) { zoom.hidden = true; panes = []; } }
  document.querySelectorAll("figure.shot img").forEach(function (img) {
    img.addEventListener("click", function () { openZoom(img.closest("figure.shot")); });
  });
  if (zoom) {
    const box = document.getElementById("zoom-panes");
    document.getElementById("zoom-close").addEventListener("click", closeZoom);
    document.getElementById("zoom-in").addEventListener("click", function () { const p = panes[0]; zoomAt(1.5, p.clientWidth / 2, p.clientHeight / 2); });
    document.getElementById("zoom-out").addEventListener("click", function () { const p = panes[0]; zoomAt(1 / 1.5, p.clientWidth / 2, p.clientHeight / 2); });
    document.getElementById("zoom-one").addEventListener("click", function () { const p = panes[0]; zoomAt(1 / view.s, p.clientWidth / 2, p.clientHeight / 2); });
    document.getElementById("zoom-fit").addEventListener("click", fit);
    box.addEventListener("wheel", function (ev) {
      const pane = ev.target.closest(".zoom-pane");
      if (!pane) return;
      ev.preventDefault();
      const r = pane.getBoundingClientRect();
      zoomAt(ev.deltaY < 0 ? 1.2 : 1 / 1.2, ev.clientX - r.left, ev.clientY - r.top);
    }, { passive: false });
    const pointers = new Map();
    let pinch = null;
    box.addEventListener("pointerdown", function (ev) {
      const pane = ev.target.closest(".zoom-pane");
      if (!pane) return;
      pane.setPointerCapture(ev.pointerId);
      pointers.set(ev.pointerId, { x: ev.clientX, y: ev.clientY, pane: pane });
      if (pointers.size === 2) {
        const [a, b] = Array.from(pointers.values());
        pinch = { d: Math.hypot(a.x - b.x, a.y - b.y) || 1 };
      }
    });
    box.addEventListener("pointermove", function (ev) {
      const p = pointers.get(ev.pointerId);
      if (!p) return;
      if (pointers.size === 1) {
        view.x += ev.clientX - p.x;
        view.y += ev.clientY - p.y;
        applyView();
      }
      p.x = ev.clientX; p.y = ev.clientY;
      if (pointers.size === 2 && pinch) {
        const [a, b] = Array.from(pointers.values());
        const d = Math.hypot(a.x - b.x, a.y - b.y) || 1;
        const r = a.pane.getBoundingClientRect();
        zoomAt(d / pinch.d, (a.x + b.x) / 2 - r.left, (a.y + b.y) / 2 - r.top);
        pinch.d = d;
      }
    });
    const up = function (ev) { pointers.delete(ev.pointerId); if (pointers.size < 2) pinch = null; };
    box.addEventListener("pointerup", up);
    box.addEventListener("pointercancel", up);
  }

  const form = document.getElementById("task-form");
  if (!form) {
    document.addEventListener("keydown", function (ev) {
      if (ev.key === "Escape") { closeZoom(); toggleGuide(false); }
      else if ((ev.key === "g" || ev.key === "G") && guide && !(ev.target instanceof HTMLInputElement || ev.target instanceof HTMLTextAreaElement)) toggleGuide();
    });
    return;
  }
  const protocol = form.dataset.protocol;
  const confirmBox = document.getElementById("confirm");
  const summary = document.getElementById("confirm-summary");
  const okButton = document.getElementById("confirm-ok");
  const backButton = document.getElementById("confirm-back");
  const sliders = Array.from(form.querySelectorAll("input.slider"));
  let sending = false;

  // ---- "moved": the dimensions whose slider or ranking the rater set (the rest are
  // exported as untouched, or refused when the organiser asks for that)
  const moved = document.createElement("input");
  moved.type = "hidden";
  moved.name = "moved";
  form.appendChild(moved);
  const movedSet = new Set();
  form.querySelectorAll("[data-moved='1']").forEach(function (el) { movedSet.add(el.dataset.dim); });
  function markMoved(dim) { movedSet.add(dim); moved.value = Array.from(movedSet).join(","); }
  moved.value = Array.from(movedSet).join(",");

  // ---- sliders: live value, "not moved" marker, arrow keys in coarse steps
  sliders.forEach(function (s) {
    const out = form.querySelector('output[for="' + s.id + '"]');
    if (!movedSet.has(s.dataset.dim)) s.classList.add("untouched");
    const show = function () {
      if (out) out.textContent = Number(s.value).toFixed(2);
      s.classList.remove("untouched");
      markMoved(s.dataset.dim);
    };
    s.addEventListener("input", show);
    s.addEventListener("change", show);
    // touch and pen: the value is where the finger is on the track (the track box is the
    // thumb's range): set by a tap, or by a drag that starts sideways. A vertical swipe
    // that starts on the slider scrolls the page and sets nothing.
    const track = s.parentElement;
    const setFrom = function (x) {
      const r = track.getBoundingClientRect();
      const lo = Number(s.min), hi = Number(s.max);
      const share = Math.min(1, Math.max(0, (x - r.left) / r.width));
      s.value = String(lo + share * (hi - lo));
      show();
    };
    let touch = null;
    s.addEventListener("pointerdown", function (ev) {
      if (ev.pointerType === "mouse") return;
      touch = { id: ev.pointerId, x0: ev.clientX, y0: ev.clientY, value: s.value, sideways: false,
                moved: movedSet.has(s.dataset.dim), untouched: s.classList.contains("untouched"),
                shown: out ? out.textContent : "" };
    });
    s.addEventListener("pointermove", function (ev) {
      if (!touch || ev.pointerId !== touch.id) return;
      const dx = ev.clientX - touch.x0, dy = ev.clientY - touch.y0;
      if (!touch.sideways && Math.abs(dx) > 8 && Math.abs(dx) > Math.abs(dy)) {
        touch.sideways = true;
        s.setPointerCapture(ev.pointerId);
      }
      if (touch.sideways) setFrom(ev.clientX);
    });
    s.addEventListener("pointerup", function (ev) {
      if (!touch || ev.pointerId !== touch.id) return;
      const moved = Math.hypot(ev.clientX - touch.x0, ev.clientY - touch.y0);
      if (touch.sideways || moved < 10) setFrom(ev.clientX);  // a drag, or a tap
      touch = null;
    });
    s.addEventListener("pointercancel", function (ev) {
      if (!touch || ev.pointerId !== touch.id) return;
      if (!touch.sideways) {  // a scroll: undo whatever the browser's own handling set
        s.value = touch.value;
        if (out) out.textContent = touch.shown;
        if (!touch.moved) { movedSet.delete(s.dataset.dim); moved.value = Array.from(movedSet).join(","); }
        if (touch.untouched) s.classList.add("untouched");
      }
      touch = null;
    });
    s.addEventListener("keydown", function (ev) {
      if (ev.key !== "ArrowLeft" && ev.key !== "ArrowRight") return;
      ev.preventDefault();
      const lo = Number(s.min), hi = Number(s.max);
      const step = (hi - lo) / (ev.shiftKey ? 4 : 20) * (ev.key === "ArrowLeft" ? -1 : 1);
      s.value = String(Math.min(hi, Math.max(lo, Number(s.value) + step)));
      show();
    });
  });

  // ---- ranking: drag and drop (mouse), drag by the handle (touch, pen), up/down buttons;
  // the hidden field holds the order
  function syncRanking(list) {
    const field = document.getElementById("dim__" + list.dataset.dim);
    field.value = Array.from(list.querySelectorAll(".rank-item")).map(function (li) { return li.dataset.slot; }).join(",");
    markMoved(list.dataset.dim);
  }
  function horizontal(list) { return getComputedStyle(list).flexDirection === "row"; }
  function placeAt(list, dragged, x, y) {
    const row = horizontal(list);
    const items = Array.from(list.querySelectorAll(".rank-item")).filter(function (li) { return li !== dragged; });
    const before = items.find(function (li) {
      const b = li.getBoundingClientRect();
      return row ? x < b.left + b.width / 2 : y < b.top + b.height / 2;
    });
    if (before) { if (dragged.nextElementSibling !== before) list.insertBefore(dragged, before); }
    else if (list.lastElementChild !== dragged) list.appendChild(dragged);
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
      const after = horizontal(list) ? ev.clientX > box.left + box.width / 2 : ev.clientY > box.top + box.height / 2;
      list.insertBefore(dragged, after ? over.nextSibling : over);
    });
    list.addEventListener("drop", function (ev) { ev.preventDefault(); syncRanking(list); });
    // touch and pen: drag by the handle (its touch-action is none, so the page does not
    // scroll). The card follows the finger as a translated box; the list is reordered once,
    // when the finger lifts (moving the touched element in the page mid-gesture would end
    // the gesture). Near the top or bottom edge of the screen the page scrolls along.
    let touchDrag = null;
    function autoScroll() {
      if (!touchDrag) return;
      const edge = 70, y = touchDrag.y;
      const dy = y < edge ? -(edge - y) / 3 : y > innerHeight - edge ? (y - innerHeight + edge) / 3 : 0;
      if (dy) { window.scrollBy(0, dy); follow(); }
      touchDrag.raf = requestAnimationFrame(autoScroll);
    }
    function follow() {
      const d = touchDrag;
      d.li.style.transform = "translate(" + (d.x - d.x0) + "px," + (d.y - d.y0 + window.scrollY - d.scroll0) + "px)";
    }
    list.addEventListener("pointerdown", function (ev) {
      const handle = ev.target.closest(".handle");
      if (!handle || ev.pointerType === "mouse") return;
      const li = handle.closest(".rank-item");
      touchDrag = { li: li, id: ev.pointerId, x0: ev.clientX, y0: ev.clientY, x: ev.clientX, y: ev.clientY, scroll0: window.scrollY };
      li.classList.add("dragging");
      li.style.position = "relative";
      li.style.zIndex = "5";
      handle.setPointerCapture(ev.pointerId);
      touchDrag.raf = requestAnimationFrame(autoScroll);
    });
    list.addEventListener("pointermove", function (ev) {
      if (!touchDrag || ev.pointerId !== touchDrag.id) return;
      touchDrag.x = ev.clientX;
      touchDrag.y = ev.clientY;
      follow();
    });
    const drop = function (ev) {
      if (!touchDrag || ev.pointerId !== touchDrag.id) return;
      const d = touchDrag;
      touchDrag = null;
      cancelAnimationFrame(d.raf);
      d.li.style.transform = d.li.style.position = d.li.style.zIndex = "";
      d.li.classList.remove("dragging");
      if (ev.type === "pointerup") placeAt(list, d.li, d.x, d.y);
      syncRanking(list);
    };
    list.addEventListener("pointerup", drop);
    list.addEventListener("pointercancel", drop);
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
        items.push(list.dataset.dim.replace(/_/g, " ") + ": " + names.join(" > ") + (movedSet.has(list.dataset.dim) ? "" : " (as shown)"));
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
    if (zoom && !zoom.hidden) {
      if (ev.key === "Escape") { ev.preventDefault(); closeZoom(); }
      else if (ev.key === "+" || ev.key === "=") document.getElementById("zoom-in").click();
      else if (ev.key === "-") document.getElementById("zoom-out").click();
      return;
    }
    if (guide && !guide.hidden) {
      if (ev.key === "Escape" || ev.key === "g" || ev.key === "G") { ev.preventDefault(); toggleGuide(false); }
      return;
    }
    if (!confirmBox.hidden) {
      if (ev.key === "Escape") { ev.preventDefault(); closeConfirm(); }
      else if (ev.key === "Enter" && ev.target !== backButton) { ev.preventDefault(); okButton.click(); }
      return;  // Enter on the focused Back button goes back (its own click)
    }
    if (ev.target.closest && ev.target.closest("details.skip")) return;  // typing a reason
    if (ev.key === "Enter" && !(ev.target instanceof HTMLButtonElement) && !(ev.target instanceof HTMLAnchorElement)) {
      ev.preventDefault();
      if (form.reportValidity()) openConfirm();
      return;
    }
    if (ev.key === "p" || ev.key === "P") { document.getElementById("pause").click(); return; }
    if ((ev.key === "g" || ev.key === "G") && guide) { ev.preventDefault(); toggleGuide(true); return; }
    if (ev.key === "z" || ev.key === "Z") {
      const first = document.querySelector("figure.shot");
      if (first) { ev.preventDefault(); openZoom(first); }
      return;
    }
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
