fetch('__ROUTE__', {method: 'DELETE', credentials: 'same-origin', headers: {'__HEADER__': '1'}});
