// What a second thread's data costs on this host: the bandwidth of one core reading and writing
// a buffer as it stands after the other core has written it, read it, or not touched it. Two
// threads split every op of a training step, and an op's threads read what the other thread
// wrote (a GEMM reads all of one operand) and write lines the other thread has read (each
// step's buffers and weights), so these figures bound what a second thread can give
// (bench/README.md, "What earlier runs taught"). Linux only: the two threads are pinned
// to the first two CPUs the process may run on.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace fucina_bench {

struct CoherenceFigures {
  int cpu_a = -1, cpu_b = -1;
  size_t kib = 0;
  // GB/s of core A, medians of the repeats.
  double write_own = 0;         // rewriting lines A wrote last
  double write_other_read = 0;  // rewriting lines A wrote and B has since read (shared by both)
  double write_other_wrote = 0; // writing lines B wrote last
  double read_own = 0;          // reading lines A wrote
  double read_other_wrote = 0;  // reading lines B wrote
};

// Runs fn on a new thread pinned to `cpu`, and waits for it.
inline void onCpu(int cpu, const std::function<void()>& fn) {
  std::thread t([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    fn();
  });
  t.join();
}

// Returns false (and says why on stderr) when the process may run on fewer than two CPUs.
inline bool measureCoherence(size_t kib, CoherenceFigures* out) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return false;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.size() < 2) {
    std::fprintf(stderr, "fucina_bench --coherence: needs two CPUs, the process may run on %zu\n", cpus.size());
    return false;
  }
  const size_t n = kib * 1024 / sizeof(float);
  const std::unique_ptr<float[]> owned(new float[n]);
  float* const buf = owned.get();
  volatile float sink = 0;
  auto write = [&](float v) { std::fill(buf, buf + n, v); };  // a memset-like loop: bound by the stores
  auto read = [&] {
    float acc[16] = {};  // independent sums, so the loop is bound by the loads, not the adds' latency
    for (size_t i = 0; i + 16 <= n; i += 16)
      for (int j = 0; j < 16; ++j) acc[j] += buf[i + j];
    sink = sink + acc[0] + acc[15];
  };
  // GB/s of `timed` on A after `before` (on A or B), median of the repeats.
  auto rate = [&](const std::function<void(int rep)>& before, const std::function<void()>& timed) {
    constexpr int kRepeats = 101;
    std::vector<double> seconds;
    for (int rep = 0; rep < kRepeats; ++rep) {
      before(rep);
      double s = 0;
      onCpu(cpus[0], [&] {
        const auto t0 = std::chrono::steady_clock::now();
        timed();
        s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      });
      seconds.push_back(s);
    }
    std::nth_element(seconds.begin(), seconds.begin() + kRepeats / 2, seconds.end());
    return static_cast<double>(kib * 1024) / seconds[kRepeats / 2] / 1e9;
  };
  const int a = cpus[0], b = cpus[1];
  out->cpu_a = a, out->cpu_b = b, out->kib = kib;
  out->write_own = rate([&](int rep) { onCpu(a, [&] { write(static_cast<float>(rep)); }); }, [&] { write(-1); });
  out->write_other_read = rate([&](int rep) {
    onCpu(a, [&] { write(static_cast<float>(rep)); });
    onCpu(b, read);
  }, [&] { write(-1); });
  out->write_other_wrote = rate([&](int rep) { onCpu(b, [&] { write(static_cast<float>(rep)); }); }, [&] { write(-1); });
  out->read_own = rate([&](int rep) { onCpu(a, [&] { write(static_cast<float>(rep)); }); }, read);
  out->read_other_wrote = rate([&](int rep) { onCpu(b, [&] { write(static_cast<float>(rep)); }); }, read);
  return true;
}

// fucina_bench --coherence: the figures for a 128 KiB and a 512 KiB buffer (half of W1's hidden
// activation, and of its first weight's gradient, per thread).
inline int printCoherence(bool json) {
  for (size_t kib : {size_t{128}, size_t{512}}) {
    CoherenceFigures f;
    if (!measureCoherence(kib, &f)) return 1;
    if (json) {
      std::printf("{\"impl\":\"fucina-native\",\"coherence_kib\":%zu,\"cpu_a\":%d,\"cpu_b\":%d,"
                  "\"write_own_gbs\":%.2f,\"write_other_read_gbs\":%.2f,\"write_other_wrote_gbs\":%.2f,"
                  "\"read_own_gbs\":%.2f,\"read_other_wrote_gbs\":%.2f}\n",
                  kib, f.cpu_a, f.cpu_b, f.write_own, f.write_other_read, f.write_other_wrote, f.read_own,
                  f.read_other_wrote);
    } else {
      std::printf("%zu KiB on cpu %d (the other: cpu %d), GB/s: write own lines %.1f, lines the other read %.1f, "
                  "lines the other wrote %.1f; read own lines %.1f, lines the other wrote %.1f\n",
                  kib, f.cpu_a, f.cpu_b, f.write_own, f.write_other_read, f.write_other_wrote, f.read_own,
                  f.read_other_wrote);
    }
  }
  return 0;
}

}  // namespace fucina_bench
