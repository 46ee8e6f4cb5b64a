// The seed's reference-tracing microbenchmark (the paper's "Reference execution" paragraph):
// 128 CTAs x 256 threads; each thread runs 64 sequential occurrences of one marked region, and
// each occurrence does `inner` iterations of either dependent FP32 FMAs (compute) or an indexed
// load followed by FMAs (memory).
#pragma once

inline constexpr int kSeedCtas = 128;
inline constexpr int kSeedThreads = 256;
inline constexpr int kSeedOccurrences = 64;
inline constexpr int kSeedFmasPerIteration = 8;  // dependent FMAs per inner iteration
// Memory variant: each thread chases a random single-cycle permutation of `tableSize` ints and
// reads a float table of the same size at the chased index. The default, 4096 entries (16 KiB per
// table), stays in L1, which puts an iteration at L1-hit latency; 2^20 (4 MiB, L2-resident) made
// the kernel 8-12x slower than the seed's (measured on the H200: 0.24 ms at inner=8, 14.6 ms at
// 512). harness --table N (a power of two) changes it.
inline constexpr int kSeedDefaultTableSize = 4096;

extern "C" __global__ void seed_compute(float* out, int inner, float a, float b);
extern "C" __global__ void seed_memory(float* out, const int* next, const float* values, int inner,
                                       int tableMask);
