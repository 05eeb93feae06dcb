// The Training page's keys (views/training.py), the listener installed once per browser tab: a digit
// picks that option of the practice item's answer (1 the first), unless the focus is in a text field.
// Ctrl+Enter (or Cmd+Enter) presses "Check my answer" or "Next", as the rating page's submit. Each
// drawn item gives its answer the keyboard focus (the top of the page stays in view).
(() => {
  const doc = document;
  const ANSWER = '[class*="st-key-training_choice_"]';
  if (!window.__psTraining) {
    window.__psTraining = true;
    doc.addEventListener("keydown", (e) => {
      if ((e.ctrlKey || e.metaKey) && e.key === "Enter") {
        const button = doc.querySelector(".st-key-training_check button, .st-key-training_next button");
        if (button && !button.disabled) {
          e.preventDefault();
          e.stopPropagation(); // the focused answer must not take the Enter too: its rerun would cut this one short
          button.click();
        }
        return;
      }
      if (e.ctrlKey || e.metaKey || e.altKey || !/^[1-9]$/.test(e.key)) return;
      const target = e.target;
      if (target && target.closest && target.closest("textarea, input:not([type=radio]), [contenteditable='true']")) return;
      const option = doc.querySelectorAll(`${ANSWER} [data-testid="stRadioOption"] input`)[Number(e.key) - 1];
      if (!option) return;
      e.preventDefault();
      e.stopPropagation();
      option.click();
    }, true); // capture: before the focused answer's own key handling
  }
  // A new item's answer takes the focus, from wherever it was (the link or button that led here),
  // once drawn, and takes it back for two seconds whenever it falls to the page itself (the page may
  // draw the item in steps and redraw the answer).
  let tries = 20;
  let first = true;
  const focusAnswer = () => {
    const radio = doc.querySelector(`${ANSWER} input[type="radio"]:checked`)
      || doc.querySelector(`${ANSWER} input[type="radio"]`);
    const active = doc.activeElement;
    if (radio && (first ? !radio.closest(ANSWER).contains(active) : !active || active === doc.body)) {
      radio.focus({ preventScroll: true });
      first = false;
    }
    if (--tries > 0) setTimeout(focusAnswer, 100);
  };
  requestAnimationFrame(focusAnswer);
})();
