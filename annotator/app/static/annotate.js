// The rating page's script (views/annotate.py), installed once per browser tab. The page calls
// window.psItem({item, start, need, answered}) for the item on screen (static/item.js, drawn by
// rating_page.render.page_script).
// - A number key answers the focused question (or, when no question has the focus, the first
//   unanswered one) and moves the focus to the next unanswered question; when none is left, to the
//   submit button. Ctrl+Enter (or Cmd+Enter) submits from anywhere.
// - A new item (after login, a change of study, a submit, a skip): the page goes to the top and,
//   once the form holds the new item's values, its first unanswered question takes the focus (from
//   wherever it was, the study picker too), scrolled into view if the top of the page does not show
//   it; so an item of n questions takes n digits and Ctrl+Enter.
// - The study picker never takes a digit: a digit there answers the first unanswered question.
// - The submit button takes input only once every question of the item is drawn (data-ps-ready).
// - On a phone, the A/B switch shows one response (and its questions) at a time.
// - Drafts: the form is one st.form, so an answer runs nothing on the server; once the answers pause
//   (ANSWER_PAUSE ms; the comment's typing COMMENT_PAUSE ms) the form's state goes to the draft route
//   (annotator/app/draft_route.py), one request at a time: answers typed in a burst make one draft, not
//   one per key. Leaving the page (a reload, a closed tab) sends a waiting draft at once; the submit
//   drops it (the submit carries the answers). A 401 (the login ended, the account was deactivated)
//   reloads the page, which then shows the login.
(() => {
  if (window.__psInstalled) return;
  window.__psInstalled = true;
  const doc = document;
  const SUBMIT = ".st-key-annotate_submit button";
  const STUDY_PICKER = ".st-key-annotate_study"; // rating_page.item.STUDY_KEY
  const GROUP = '[data-testid="stButtonGroup"]';
  const IDLE = "[data-test-script-state='notRunning']"; // Streamlit's run is over
  let current = { item: null, start: Date.now(), need: [] };
  let watch = null;
  let focusPending = false;
  const DRAFT_ROUTE = "/_pair/draft";
  const COMMENT = ".st-key-q_comment textarea";
  let draftBusy = false;
  let draftAgain = false;
  let draftTimer = null;
  const ANSWER_PAUSE = 300;
  const COMMENT_PAUSE = 700;

  const groups = () => [...doc.querySelectorAll(`[class*="st-key-q_"] ${GROUP}`)];
  const answered = (group) => !!group.querySelector('button[aria-checked="true"]');
  const sideOf = (group) => {
    const box = group.closest('[class*="st-key-q_A_"], [class*="st-key-q_B_"]');
    if (!box) return null;
    return box.className.includes("st-key-q_A_") ? "A" : "B";
  };

  const keyOf = (group) => {
    const box = group.closest('[class*="st-key-q_"]');
    const name = box && [...box.classList].find((c) => c.startsWith("st-key-q_"));
    return name ? name.slice("st-key-".length) : null;
  };

  const formState = () => { // {widget key: index of the selected option} and the comment
    const answers = {};
    for (const group of groups()) {
      const key = keyOf(group);
      const index = [...group.querySelectorAll("button")].findIndex(
        (b) => b.getAttribute("aria-checked") === "true");
      if (key && index >= 0) answers[key] = index;
    }
    const comment = doc.querySelector(COMMENT);
    return { item: current.item, answers, comment: comment ? comment.value : "" };
  };

  const sendDraft = () => {
    if (!current.item || !doc.querySelector(SUBMIT)) return;
    if (draftBusy) { draftAgain = true; return; }
    draftBusy = true;
    fetch(DRAFT_ROUTE, {
      method: "POST", credentials: "same-origin", keepalive: true,
      headers: { "Content-Type": "application/json", "X-Pair-Studio-Draft": "1" },
      body: JSON.stringify(formState()),
    }).then((response) => {
      if (response.status === 401) window.location.reload();
    }).catch(() => {}).finally(() => {
      draftBusy = false;
      if (draftAgain) { draftAgain = false; sendDraft(); }
    });
  };

  const draftSoon = (pause) => { // (again) wait for a pause, then post the draft
    clearTimeout(draftTimer);
    draftTimer = setTimeout(() => { draftTimer = null; sendDraft(); }, pause);
  };
  const dropDraft = () => { clearTimeout(draftTimer); draftTimer = null; };
  const draftNow = () => { // a draft that waits for a pause goes now (the page is being left)
    if (draftTimer === null) return;
    dropDraft();
    sendDraft();
  };
  window.addEventListener("pagehide", draftNow);
  doc.addEventListener("visibilitychange", () => { if (doc.visibilityState === "hidden") draftNow(); });

  const setSide = (side) => {
    doc.body.dataset.psSide = side;
    for (const button of doc.querySelectorAll(".ps-switch button")) {
      button.setAttribute("aria-pressed", String(button.dataset.side === side));
    }
  };

  // The button of a question that takes the focus: its selected option, else its first.
  const focusTarget = (group) =>
    group.querySelector('button[aria-checked="true"]') || group.querySelector("button");

  const focusGroup = (group) => {
    const side = sideOf(group);
    if (side && doc.body.dataset.psSide !== side && window.matchMedia("(max-width: 640px)").matches) {
      setSide(side);
    }
    const button = focusTarget(group);
    if (!button) return;
    button.focus({ preventScroll: true });
    const box = group.getBoundingClientRect();
    const header = 64;
    if (box.top < header || box.bottom > window.innerHeight) {
      group.scrollIntoView({ block: "center" });
    }
  };

  const nextUnanswered = (after) => {
    const all = groups();
    const open = all.filter((g) => g !== after && !answered(g));
    if (!after) return open[0] || null;
    const index = all.indexOf(after);
    return open.find((g) => all.indexOf(g) > index) || open[0] || null;
  };

  const moveOn = (from) => {
    const next = nextUnanswered(from);
    if (next) {
      focusGroup(next);
      return;
    }
    const submit = doc.querySelector(SUBMIT);
    if (submit) {
      submit.focus({ preventScroll: true });
      submit.scrollIntoView({ block: "nearest" });
    }
  };

  const toTop = () => {
    for (const el of [doc.scrollingElement, doc.querySelector('[data-testid="stMain"]'),
                      doc.querySelector('[data-testid="stAppScrollToBottomContainer"]')]) {
      if (el) el.scrollTop = 0;
    }
    window.scrollTo(0, 0);
  };

  const ready = () => {
    if (doc.body.dataset.psReady !== current.item) {
      const complete = doc.querySelector(SUBMIT) && current.need.every(
        (key) => doc.querySelector(`.st-key-${key} ${GROUP} button`));
      if (!complete) return false;
      doc.body.dataset.psReady = current.item;
    }
    if (focusPending) { // once the run is over (the form holds this item's values): the first question
      if (!doc.querySelector(IDLE) || doc.querySelector("[data-stale='true']") || !formShowsItem()) return false;
      focusPending = false;
      // A new item opens at its top (the question first). The focus goes to its first question when
      // that is wholly on screen there; else it leaves the old item (Space scrolls to read on, and a
      // digit still answers the first open question, then scrolls to the next).
      toTop();
      const first = nextUnanswered(null) || groups()[0];
      const button = first && focusTarget(first);
      const box = button && first.getBoundingClientRect();
      if (box && box.top >= 0 && box.bottom <= window.innerHeight) {
        button.focus({ preventScroll: true });
      } else if (doc.activeElement && doc.activeElement !== doc.body) {
        doc.activeElement.blur();
      }
      doc.body.dataset.psOpened = current.item; // opened: at the top, the focus placed
    }
    return true;
  };

  // Whether the form shows the item's own answers (a draft's or a revision's, else none): the questions'
  // widget keys are the same on every item, so for a moment after a new item the old answers can
  // still be drawn; the focus waits for the new item's values.
  const formShowsItem = () => {
    const given = current.answered || [];
    return groups().every((group) => answered(group) === given.includes(keyOf(group)));
  };

  const tick = () => {
    const el = doc.getElementById("ps-timer");
    if (!el) return;
    const s = Math.max(0, Math.round((Date.now() - current.start) / 1000));
    el.textContent = Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  };

  window.psItem = (config) => {
    if (config.item !== current.item) {
      dropDraft(); // the item it was for has left (skipped, flagged)
      doc.body.dataset.psItem = config.item; // the item on screen, for scripts that drive the page
      delete doc.body.dataset.psReady;
      setSide("A");
      focusPending = true;
      toTop();
    }
    current = config;
    if (watch) watch.disconnect();
    if (!ready()) { // watch the page being drawn: ready as soon as the last question is there
      watch = new MutationObserver(() => {
        if (ready()) watch.disconnect();
      });
      watch.observe(doc.body, {
        childList: true, subtree: true, attributes: true,
        attributeFilter: ["data-stale", "data-test-script-state", "aria-checked"],
      });
    }
    tick();
  };
  setInterval(tick, 1000);
  if (window.__psPending) window.psItem(window.__psPending);

  doc.addEventListener("click", (e) => {
    const target = e.target && e.target.closest ? e.target : null;
    const button = target && target.closest(".ps-switch button");
    if (button) setSide(button.dataset.side);
    if (target && target.closest(`[class*="st-key-q_"] ${GROUP} button`)) draftSoon(ANSWER_PAUSE);
    if (target && target.closest(SUBMIT)) dropDraft(); // the submit carries the answers
  }, true);

  doc.addEventListener("input", (e) => {
    if (e.target && e.target.matches && e.target.matches(COMMENT)) {
      draftSoon(COMMENT_PAUSE);
    }
  });

  doc.addEventListener("keydown", (e) => {
    const early = doc.body.dataset.psReady !== current.item; // the form is not all there yet: no submit
    const target = e.target;
    if (early && (e.key === "Enter" || e.key === " ") && target && target.closest
        && target.closest(".st-key-annotate_submit")) {
      e.preventDefault();
      e.stopPropagation();
      return;
    }
    if ((e.ctrlKey || e.metaKey) && e.key === "Enter") {
      const button = doc.querySelector(SUBMIT);
      if (button && !button.disabled && !early) {
        e.preventDefault();
        e.stopPropagation();
        button.click();
      }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey || !/^[0-9]$/.test(e.key)) return;
    const picker = !!(target && target.closest && target.closest(STUDY_PICKER));
    if (picker) e.preventDefault(); // a digit is an answer, never a study name
    if (!doc.querySelector(SUBMIT)) return; // not the rating page
    if (!picker && target && target.closest && target.closest("input, textarea, select, [contenteditable='true']")) return;
    const focused = !picker && target && target.closest ? target.closest(`[class*="st-key-q_"] ${GROUP}`) : null;
    const group = focused || nextUnanswered(null);
    if (!group) return;
    for (const option of group.querySelectorAll("button")) {
      if (option.innerText.trim().split(/\s/)[0] === e.key) {
        e.preventDefault();
        e.stopPropagation();
        if (option.getAttribute("aria-checked") !== "true") option.click(); // a key never unselects
        moveOn(group);
        return;
      }
    }
  }, true);
})();
