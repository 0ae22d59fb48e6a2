// Deterministic random numbers for the workload generator.
//
// The generator must produce byte-identical output for a seed on every platform, so it does not
// use <random>'s distributions (their algorithms are implementation-defined). Rng is
// xoshiro256** seeded through splitmix64, with uniform, normal (Box-Muller), lognormal, Poisson
// and geometric draws written out here. Each replica and each rank derives its own stream from
// (seed, salt) so that adding a rank does not perturb the draws of the others.
// Thread-safety: an Rng is plain state; use one per thread.
#pragma once

#include <cmath>
#include <cstdint>

namespace truffld::synth {

inline uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed, uint64_t salt = 0) {
    uint64_t x = seed * 0x100000001b3ULL ^ (salt + 0x51ed270b27cbd1b5ULL);
    for (auto& w : s_) w = SplitMix64(x);
  }

  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  // Uniform integer in [lo, hi] (inclusive); lo <= hi.
  int64_t Int(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int64_t>(span == 0 ? Next() : Next() % span);
  }
  bool Bernoulli(double p) { return Uniform() < p; }
  // Standard normal via Box-Muller (one value per call, the pair's second half is dropped so the
  // stream position depends only on the number of calls).
  double Normal() {
    double u1 = Uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // Multiplicative jitter with median 1: exp(sigma * N(0,1)).
  double LogNormalFactor(double sigma) { return std::exp(sigma * Normal()); }
  // Poisson by inversion (fine for the small means used here, < 50).
  int64_t Poisson(double mean) {
    const double l = std::exp(-mean);
    int64_t k = 0;
    double p = Uniform();
    while (p > l && k < 1000) {
      p *= Uniform();
      ++k;
    }
    return k;
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace truffld::synth
