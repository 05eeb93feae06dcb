// Scroll the page back to its top once drawn (after an action whose result is drawn at the top).
requestAnimationFrame(() => {
  for (const el of [document.scrollingElement, document.querySelector('[data-testid="stMain"]'),
                    document.querySelector('[data-testid="stAppScrollToBottomContainer"]')]) {
    if (el) el.scrollTop = 0;
  }
  window.scrollTo(0, 0);
});
