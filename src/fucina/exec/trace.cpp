#include "fucina/exec/trace.h"

#ifdef FUCINA_TRACE
#include <cxxabi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace fucina::trace {
namespace {

struct Event {
  int64_t ns;
  int thread;
  Kind kind;
  int64_t a, b;
  const char* label;
  std::array<char, 24> text;  // recordText's copy
};

constexpr size_t kCapacity = size_t{1} << 20;  // events past it are dropped (and counted)

int64_t now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Log {
  std::unique_ptr<Event[]> events{new Event[kCapacity]};
  std::atomic<size_t> next{0};
  std::atomic<int> threads{0};

  std::atomic<bool> written{false};

  ~Log() {  // at exit: write what was recorded, unless writeTo already did
    if (written) return;
    const char* path = std::getenv("FUCINA_TRACE_FILE");
    write(path && *path ? path : "fucina-trace.tsv");
  }

  bool write(const char* path) {
    std::FILE* f = std::fopen(path, "w");
    if (!f) return false;
    const size_t n = std::min(next.load(), kCapacity);
    std::fprintf(f, "# fucina region trace: ns thread kind a b label; %zu events, %zu dropped\n", n,
                 next.load() - n);
    for (size_t i = 0; i < n; ++i) {
      const Event& e = events[i];
      int status = 1;
      char* demangled = e.label ? abi::__cxa_demangle(e.label, nullptr, nullptr, &status) : nullptr;
      const char* label = status == 0 ? demangled : e.label ? e.label : e.text.data();
      std::fprintf(f, "%lld\t%d\t%d\t%lld\t%lld\t%s\n", static_cast<long long>(e.ns), e.thread,
                   static_cast<int>(e.kind), static_cast<long long>(e.a), static_cast<long long>(e.b), label);
      std::free(demangled);
    }
    return std::fclose(f) == 0;
  }
};

Log& log() {
  static Log the_log;
  return the_log;
}

Event* slot() {
  Log& l = log();
  const size_t i = l.next.fetch_add(1, std::memory_order_relaxed);
  return i < kCapacity ? &l.events[i] : nullptr;
}

int threadNumber() {
  thread_local const int number = log().threads.fetch_add(1);
  return number;
}

}  // namespace

void record(Kind kind, int64_t a, int64_t b, const char* label) {
  const int thread = threadNumber();
  if (Event* e = slot()) *e = {now(), thread, kind, a, b, label, {}};
}

void recordText(Kind kind, int64_t a, int64_t b, const char* text) {
  const int thread = threadNumber();
  if (Event* e = slot()) {
    *e = {now(), thread, kind, a, b, nullptr, {}};
    std::memcpy(e->text.data(), text, strnlen(text, e->text.size() - 1));  // the rest stays zero
  }
}

bool writeTo(const char* path) {
  log().written = true;
  return log().write(path);
}

}  // namespace fucina::trace
#endif
