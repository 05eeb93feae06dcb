(window.psItem || ((c) => { window.__psPending = c; }))(__ITEM__);
