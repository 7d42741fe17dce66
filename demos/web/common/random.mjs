// The demos' seeded generator (mulberry32): the same text windows and samples on every run with
// the same seed, in the browser and in Node.

/** A function returning uniform numbers in [0, 1) drawn from seed. */
export function makeRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
