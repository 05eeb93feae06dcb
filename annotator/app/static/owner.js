// The profile owner's page's script (views/owner.py), installed once per browser tab. Each run that
// draws a pair hands it __PAIR__: {box, draft, questions}, the key of the container of the pair's
// questions, the name its unsaved answers are kept under (a digest of the owner session and the pair)
// and how many questions it asks; null once every pair is answered.
// - A digit n answers the question in focus (a radio group of the pair's form), or when none has the
//   focus the first unanswered one, with its n-th option, and moves the focus to the next unanswered
//   question; when none is left, to "Save and continue". A digit beyond the question's options does
//   nothing, a held key answers once, and a digit typed into a text field stays there.
// - Ctrl+Enter (or Cmd+Enter) saves from anywhere on the page.
// - Answers ticked and not saved yet are kept in this tab's sessionStorage as option indexes per
//   question; once a reload of the same pair has drawn every question and the run is over, they are
//   ticked again (a click on each option, each index checked against the options drawn, a question
//   already answered left alone). Only the pair on screen keeps its answers: the next pair (after a
//   save) or the end of the pairs drops every other.
// - A pair drawn (a new page, the next pair after a save), its answers restored: when nothing else
//   has the focus, its first unanswered question takes it (or Save, when none is left), without
//   scrolling (the pair is read from its top) unless answers were restored (then it is scrolled to).
(() => {
  const pair = __PAIR__;
  if (window.psOwnerPair) { window.psOwnerPair(pair); return; }
  const doc = document;
  const PREFIX = "pair-studio-owner:";
  const IDLE = "[data-test-script-state='notRunning']"; // Streamlit's run is over
  const TYPING = 'input:not([type="radio"]):not([type="checkbox"]), textarea, select, '
    + '[contenteditable="true"]'; // a digit typed there is text
  let current = null; // {box, draft, questions, restored} of the pair on screen
  let watch = null;

  const box = () => current && doc.querySelector(`.st-key-${current.box}`);
  const groups = () => { const b = box(); return b ? [...b.querySelectorAll('[role="radiogroup"]')] : []; };
  const options = (group) => [...group.querySelectorAll('input[type="radio"]')];
  const answered = (group) => options(group).some((option) => option.checked);
  const saveButton = () => {
    const b = box();
    return b && b.querySelector('[data-testid="stFormSubmitButton"] button');
  };
  const storeKey = () => current && `${PREFIX}${current.box}:${current.draft}`;
  const keyOf = (group) => { // the question's widget key: the class st-key-KEY of its element
    const element = group.closest('[data-testid="stElementContainer"]');
    const name = element && [...element.classList].find((c) => c.startsWith("st-key-"));
    return name ? name.slice("st-key-".length) : null;
  };

  const keep = () => { // the pair's ticked answers: {widget key: index of the option}
    const name = storeKey();
    if (!name || !current.restored) return; // before the restore, the kept answers stay as they are
    const answers = {};
    for (const group of groups()) {
      const index = options(group).findIndex((option) => option.checked);
      const key = keyOf(group);
      if (key && index >= 0) answers[key] = index;
    }
    if (!Object.keys(answers).length) return; // (a radio is never unticked)
    try {
      sessionStorage.setItem(name, JSON.stringify(answers));
    } catch (error) { /* storage full or off: the answers stay on the page only */ }
  };

  const stored = () => { // the kept answers of the pair on screen, untrusted: an object, else none
    try {
      const value = JSON.parse(sessionStorage.getItem(storeKey()) || "null");
      return value && typeof value === "object" && !Array.isArray(value) ? value : null;
    } catch (error) { return null; }
  };

  const dropOthers = () => { // every kept pair but the one on screen
    try {
      const name = storeKey();
      for (let i = sessionStorage.length - 1; i >= 0; i--) {
        const key = sessionStorage.key(i);
        if (key && key.startsWith(PREFIX) && key !== name) sessionStorage.removeItem(key);
      }
    } catch (error) { /* storage off */ }
  };

  const restore = () => { // true once done: every question drawn (a radio's options come after its
    // element) and the run over
    const drawn = groups().filter((group) => options(group).length).length >= current.questions;
    if (!drawn || !saveButton() || !doc.querySelector(IDLE) || doc.querySelector("[data-stale='true']")) {
      return false;
    }
    const answers = stored();
    current.restored = true;
    let ticked = false;
    for (const group of answers ? groups() : []) {
      const key = keyOf(group);
      const index = key && Object.hasOwn(answers, key) ? answers[key] : null;
      const choices = options(group);
      if (Number.isInteger(index) && index >= 0 && index < choices.length && !answered(group)) {
        choices[index].click();
        ticked = true;
      }
    }
    keep(); // with what was ticked while the form was being drawn
    const focus = doc.activeElement;
    if (!focus || focus === doc.body) { // a pair just drawn: the focus to its first open question
      const first = groups().find((group) => !answered(group));
      const target = first ? focusTarget(first) : saveButton();
      if (ticked) show(target); // where the answers left off
      else target.focus({ preventScroll: true }); // the pair is read from its top
    }
    return true;
  };

  const focusTarget = (group) => options(group).find((option) => option.checked) || options(group)[0];
  const show = (element) => { // the focus, scrolled into view when off screen (below the header)
    element.focus({ preventScroll: true });
    const place = element.getBoundingClientRect();
    if (place.top < 64 || place.bottom > window.innerHeight) element.scrollIntoView({ block: "center" });
  };

  const moveOn = (from) => { // the next unanswered question after `from` (then from the top), else Save
    const all = groups();
    const open = all.filter((group) => group !== from && !answered(group));
    const next = open.find((group) => all.indexOf(group) > all.indexOf(from)) || open[0];
    const target = next ? focusTarget(next) : saveButton();
    if (target) show(target);
  };

  window.psOwnerPair = (config) => {
    const same = current && config && current.box === config.box && current.draft === config.draft;
    if (same) return;
    current = config ? { ...config, restored: false } : null;
    dropOthers();
    if (watch) watch.disconnect();
    if (!current || restore()) return;
    watch = new MutationObserver(() => { if (restore()) watch.disconnect(); });
    watch.observe(doc.body, {
      childList: true, subtree: true, attributes: true,
      attributeFilter: ["data-stale", "data-test-script-state"],
    });
  };

  doc.addEventListener("change", (e) => { // an answer ticked (by a click, a key, or a restore)
    const b = box();
    if (b && e.target && e.target.matches('input[type="radio"]') && b.contains(e.target)) keep();
  });

  doc.addEventListener("keydown", (e) => {
    const b = box();
    if (!b) return;
    if ((e.ctrlKey || e.metaKey) && e.key === "Enter") {
      const button = saveButton();
      if (button && !button.disabled) {
        e.preventDefault();
        e.stopPropagation();
        button.click();
      }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey || !/^[0-9]$/.test(e.key)) return;
    const target = e.target && e.target.closest ? e.target : null;
    if (target && target.closest(TYPING)) return;
    const focused = target && target.closest('[role="radiogroup"]');
    const group = focused && b.contains(focused) ? focused : groups().find((g) => !answered(g));
    const option = group && options(group)[Number(e.key) - 1];
    if (!option) return;
    e.preventDefault();
    e.stopPropagation();
    if (e.repeat) return;
    if (!option.checked) option.click();
    moveOn(group);
  }, true);

  window.psOwnerPair(pair);
})();
