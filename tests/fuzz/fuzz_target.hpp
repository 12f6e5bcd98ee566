// The interface every fuzz target implements: the libFuzzer entry point, plus seed inputs that the standalone
// driver (standalone_main.cpp) replays and mutates when the compiler has no libFuzzer.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

/// Valid and near-valid inputs to start from.
std::vector<std::string> fuzz_seeds();

/// Aborts with a message when a property does not hold (works with and without libFuzzer).
#define FUZZ_CHECK(cond)                                                                   \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "fuzz property failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      __builtin_abort();                                                                   \
    }                                                                                      \
  } while (0)
