// FUCINA_SCALAR_LOOP before a loop asks clang not to vectorize, interleave or unroll it: for the
// loops instantiated per element type and op whose speed matters less than their wasm size (the
// f64 and integer paths, the reference backend).
#pragma once

#if defined(__clang__)
#define FUCINA_SCALAR_LOOP _Pragma("clang loop vectorize(disable) interleave(disable) unroll(disable)")
#else
#define FUCINA_SCALAR_LOOP
#endif
