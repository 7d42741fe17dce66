// Seeded values in [-1, 1): the same in Node and in a page (tests/js/webgpu.test.mjs and
// tests/browser/webgpu.html compare the devices on them), with no import of the package.
export function values(n, seed) {
  let s = seed >>> 0;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  });
}
