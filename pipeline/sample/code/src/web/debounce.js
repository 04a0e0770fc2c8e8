// Debounce and throttle helpers for UI event handlers.

/**
 * Returns a function that runs `fn` only after `wait` milliseconds have passed
 * without another call. Useful for search boxes and resize handlers.
 */
export function debounce(fn, wait = 200) {
  let timer = null;
  return function debounced(...args) {
    clearTimeout(timer);
    timer = setTimeout(() => fn.apply(this, args), wait);
  };
}

/**
 * Returns a function that runs `fn` at most once every `interval` milliseconds.
 */
export function throttle(fn, interval = 100) {
  let last = 0;
  let pending = null;
  return function throttled(...args) {
    const now = Date.now();
    const remaining = interval - (now - last);
    if (remaining <= 0) {
      last = now;
      fn.apply(this, args);
    } else if (!pending) {
      pending = setTimeout(() => {
        pending = null;
        last = Date.now();
        fn.apply(this, args);
      }, remaining);
    }
  };
}
