requestAnimationFrame(() => document.querySelector('.st-key-item_reason input')?.focus());
