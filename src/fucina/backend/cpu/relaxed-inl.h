// Where the relaxed-simd wasm build uses relaxed SIMD (docs/relaxed-simd.md), and the SIMD128 or
// native operations every other build uses there.
//
// MulAddAcc(m, x, a) = m·x + a for the accumulating loops (the GEMM's tile, the q8_0 GEMV, dot
// products), where fused or not is the engine's choice: Highway's MulAdd, except in the
// relaxed-simd wasm build (-mrelaxed-simd), where it is f32x4.relaxed_madd, which V8 lowers to one
// FMA where the CPU has it (Highway 1.0.3's wasm MulAdd is a multiply then an add). Elementwise
// kernels (GELU's erfc, the optimizer's update) keep hn::MulAdd: their multiply-adds are on no
// loop-carried chain, so fusing would gain little, and unfused they do the simd build's arithmetic.
// Include it inside a per-target namespace of a foreach_target file, after the `hn` alias; the
// toggle guard lets each target's pass include it again.
#if defined(FUCINA_CPU_RELAXED_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef FUCINA_CPU_RELAXED_INL_H_
#undef FUCINA_CPU_RELAXED_INL_H_
#else
#define FUCINA_CPU_RELAXED_INL_H_
#endif

template <class V>
HWY_INLINE V MulAddAcc(V m, V x, V a) {
#if HWY_TARGET == HWY_WASM && defined(__wasm_relaxed_simd__)
  if constexpr (sizeof(hn::TFromV<V>) == 4 && hwy::IsFloat<hn::TFromV<V>>())
    return V{__builtin_wasm_relaxed_madd_f32x4(m.raw, x.raw, a.raw)};
#endif
  return hn::MulAdd(m, x, a);
}

// IfThenElseLanes(mask, yes, no) = hn::IfThenElse for a mask of whole lanes (a comparison's): in
// the relaxed-simd wasm build i32x4.relaxed_laneselect, which V8 lowers to one blend where the
// CPU has it, against three instructions for SIMD128's bitwise select. Whole-lane masks give it
// the same result on every engine.
template <class M, class V>
HWY_INLINE V IfThenElseLanes(M mask, V yes, V no) {
#if HWY_TARGET == HWY_WASM && defined(__wasm_relaxed_simd__)
  if constexpr (sizeof(hn::TFromV<V>) == 4 && sizeof(yes.raw) == 16) {
    using I32x4 = int32_t __attribute__((vector_size(16)));
    using Raw = decltype(yes.raw);
    return V{reinterpret_cast<Raw>(__builtin_wasm_relaxed_laneselect_i32x4(
        reinterpret_cast<I32x4>(yes.raw), reinterpret_cast<I32x4>(no.raw), reinterpret_cast<I32x4>(mask.raw)))};
  }
#endif
  return hn::IfThenElse(mask, yes, no);
}

#endif  // FUCINA_CPU_RELAXED_INL_H_
