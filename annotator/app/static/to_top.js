// Scroll the page back to its top once drawn (after an action whose result is drawn at the top), and
// give the keyboard focus to the first element matching __FOCUS__ (a CSS selector; none when empty)
// without scrolling, once the page has drawn it.
requestAnimationFrame(() => {
  for (const el of [document.scrollingElement, document.querySelector('[data-testid="stMain"]'),
                    document.querySelector('[data-testid="stAppScrollToBottomContainer"]')]) {
    if (el) el.scrollTop = 0;
  }
  window.scrollTo(0, 0);
  const selector = __FOCUS__;
  let tries = 20;
  const focus = () => {
    const target = selector && document.querySelector(selector);
    if (target) target.focus({ preventScroll: true });
    else if (selector && --tries > 0) setTimeout(focus, 100);
  };
  focus();
});
