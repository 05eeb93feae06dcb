setTimeout(() => window.top.location.assign(__URL__), 5000);
