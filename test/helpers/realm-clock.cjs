// Replaces Date.now in the realm CommonJS modules run in (mailauth's), which a test file's own
// globals may not be. Returns the function that puts the real one back.
'use strict';
exports.stubNow = (fn) => {
  const real = Date.now;
  Date.now = fn;
  return () => {
    Date.now = real;
  };
};
