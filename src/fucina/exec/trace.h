// Region trace: an opt-in timeline of the pool's parallel regions, their chunks and claims, and
// every GEMM, for finding where a second thread loses time (Note [Region trace]).
#pragma once

#include <cstdint>

namespace fucina::trace {

// Note [Region trace]: sampling profilers cannot say how long a region's chunk waited for the
// other thread, or what a 20 µs op costs on one thread against two. A build configured with
// -DFUCINA_TRACE=ON records, per thread, a timestamped event at each boundary below; at exit the
// events are written to $FUCINA_TRACE_FILE (default fucina-trace.tsv), one per line, thread by
// thread, and bench/trace.mjs summarizes them per step. A record costs a clock read and a store
// into the thread's own buffer (trace.cpp says what that costs a step); other builds compile the
// FUCINA_TRACE_EVENT calls away.
enum class Kind : int {
  kRegion = 1,      // ExecContext::parallelFor entered: a = n, b = grain, label = what runs
  kRegionEnd = 2,
  kChunk = 3,       // WorkPool chunk started on this thread: a = chunk index
  kChunkEnd = 4,
  kClaim = 5,       // claimedFor handed [a, b) to this thread
  kClaimEnd = 6,
  kGemm = 7,        // gemm entered: a = m, b = n, label = "k=.. ta=.. tb=.."
  kGemmEnd = 8,
  kStep = 9,        // a timed bench step starts
};

#ifdef FUCINA_TRACE
// `label` must outlive the process (a literal or a type name) or be null; `text` is copied.
void record(Kind kind, int64_t a = 0, int64_t b = 0, const char* label = nullptr);
void recordText(Kind kind, int64_t a, int64_t b, const char* text);
// Writes every event recorded so far to `path`, instead of at exit; false if it cannot be written.
bool writeTo(const char* path);
// Records `end` when the enclosing scope exits, however it exits.
struct EndOfScope {
  Kind end;
  ~EndOfScope() { record(end); }
};
#define FUCINA_TRACE_EVENT(...) ::fucina::trace::record(__VA_ARGS__)
#define FUCINA_TRACE_TEXT(...) ::fucina::trace::recordText(__VA_ARGS__)
#define FUCINA_TRACE_END_OF_SCOPE(kind) const ::fucina::trace::EndOfScope fucina_trace_end_{kind}
#else
#define FUCINA_TRACE_EVENT(...) ((void)0)
#define FUCINA_TRACE_TEXT(...) ((void)0)
#define FUCINA_TRACE_END_OF_SCOPE(kind) ((void)0)
#endif

}  // namespace fucina::trace
