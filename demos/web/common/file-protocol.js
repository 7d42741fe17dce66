// A classic script (not a module), so it runs where modules do not: browsers load no JavaScript
// module from a file:// page, so the page's main.mjs never runs and its badges would stay at
// "loading…". Says why, and how to open the page.
if (location.protocol === 'file:') {
  const banner = document.getElementById('errors');
  banner.hidden = false;
  banner.textContent = 'This page needs a web server: browsers load no JavaScript module from a file:// page. ' +
    'Run `npm run demos` in the repository and open the address it prints (http://127.0.0.1:8080/).';
  for (const el of document.querySelectorAll('b')) if (el.textContent === 'loading…') el.textContent = 'not loaded (file://)';
}
