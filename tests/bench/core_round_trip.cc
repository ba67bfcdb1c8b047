// How long one thread takes to hear back from another on the next CPU: a flag passed back and
// forth between two threads pinned to the first two CPUs this process may use, the median
// round trip over several batches. Not part of the suite: peer_bench.sh prints it beside each
// model's times, because a virtual machine's two vCPUs are sometimes placed far apart on the
// host (a round trip of ~90 ns becomes ~400 ns), and a run of several threads, whose kernels
// synchronise at every parallel region, then slows down by far more than a run of one thread.
// usage: collage_core_round_trip  ->  "round trip 92 ns between CPUs 0 and 1"
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

alignas(64) std::atomic<long> ball{0};

}  // namespace

int main() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return 2;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.size() < 2) {
    std::printf("round trip: one CPU only\n");
    return 0;
  }
  constexpr long kBatches = 9, kTrips = 20000;
  std::thread partner([&] {
    pin_to(cpus[1]);
    for (long i = 0; i < kBatches * kTrips; ++i) {
      while (ball.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      ball.store(2 * i + 2, std::memory_order_release);
    }
  });
  pin_to(cpus[0]);
  std::vector<double> ns;
  for (long b = 0; b < kBatches; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = b * kTrips; i < (b + 1) * kTrips; ++i) {
      ball.store(2 * i + 1, std::memory_order_release);
      while (ball.load(std::memory_order_acquire) != 2 * i + 2) {
      }
    }
    ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
                 kTrips);
  }
  partner.join();
  std::sort(ns.begin(), ns.end());
  std::printf("round trip %.0f ns between CPUs %d and %d\n", ns[ns.size() / 2], cpus[0], cpus[1]);
  return 0;
}
