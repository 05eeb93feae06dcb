fetch('__ROUTE__', {method: 'POST', credentials: 'same-origin', headers: {'__HEADER__': '__TICKET__'}});
