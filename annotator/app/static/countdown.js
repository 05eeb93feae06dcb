(() => {
  const end = Date.now() + __MS__;
  clearInterval(window.__psCountdown);
  const tick = () => {
    const el = document.getElementById('ps-countdown');
    if (!el) return;
    const s = Math.max(0, Math.round((end - Date.now()) / 1000));
    el.textContent = Math.floor(s / 60) + ':' + String(s % 60).padStart(2, '0');
    if (s <= __WARN__) el.parentElement.classList.add('ps-countdown-warn');
  };
  tick();
  window.__psCountdown = setInterval(tick, 1000);
})();
