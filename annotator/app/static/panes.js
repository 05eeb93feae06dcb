(() => {
  window.__psPanes = Object.assign(window.__psPanes || {}, __PANES__);
  const name = (box, label) => {
    box.setAttribute('tabindex', '0');
    box.setAttribute('role', 'region');
    box.setAttribute('aria-label', label);
  };
  const mark = () => {
    for (const [key, label] of Object.entries(window.__psPanes)) {
      for (const pane of document.querySelectorAll('.st-key-' + key)) {
        if (pane.getAttribute('aria-label') !== label) name(pane, label);
      }
    }
    for (const box of document.querySelectorAll('[data-testid="stTable"] div')) {
      const style = getComputedStyle(box);
      const scrolls = box.scrollWidth > box.clientWidth + 1 || box.scrollHeight > box.clientHeight + 1;
      const scrollable = /(auto|scroll)/.test(style.overflowX + style.overflowY);
      if (scrolls && scrollable && !box.hasAttribute('tabindex')) {
        name(box, 'table (scrolls sideways)');
      }
    }
    // A table wider than its box says so under it (a phone shows no scroll bar until touched).
    for (const table of document.querySelectorAll('[data-testid="stTable"], [data-testid="stDataFrame"]')) {
      const holder = table.closest('[data-testid="stElementContainer"]') || table;
      const boxes = table.querySelectorAll('[data-testid="stTable"] > div, div, .dvn-scroller');
      const wide = [...boxes].some((box) => box.scrollWidth > box.clientWidth + 1
        && /(auto|scroll)/.test(getComputedStyle(box).overflowX));
      if (wide !== holder.hasAttribute('data-ps-wide')) holder.toggleAttribute('data-ps-wide', wide);
    }
  };
  mark();
  if (window.__psPanesWatch) return;
  window.addEventListener('resize', mark);
  window.__psPanesWatch = new MutationObserver(mark);
  window.__psPanesWatch.observe(document.body, { childList: true, subtree: true });
})();
