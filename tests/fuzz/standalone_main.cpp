// Runs a fuzz target without libFuzzer: replays the seeds, then a bounded number of mutations of them (byte
// flips, insertions, truncations, splices), from a fixed seed so a failure reproduces. Usage:
//   <target> [iterations]            default 20000
//   <target> --write-seeds DIR       writes the seeds as files, to start a libFuzzer corpus
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "fuzz_target.hpp"

namespace {
void run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
}
}  // namespace

int main(int argc, char** argv) {
  const auto seeds = fuzz_seeds();
  if (argc == 3 && std::string(argv[1]) == "--write-seeds") {
    std::filesystem::create_directories(argv[2]);
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      std::ofstream(std::filesystem::path(argv[2]) / ("seed-" + std::to_string(i)), std::ios::binary) << seeds[i];
    }
    return 0;
  }
  const long iterations = argc > 1 ? std::stol(argv[1]) : 20000;
  for (const auto& s : seeds) run(s);
  std::mt19937_64 gen(20261129);
  for (long i = 0; i < iterations; ++i) {
    std::string input = seeds[gen() % seeds.size()];
    const int edits = 1 + static_cast<int>(gen() % 8);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = input.empty() ? 0 : gen() % input.size();
      switch (gen() % 5) {
        case 0: if (!input.empty()) input[at] = static_cast<char>(gen()); break;
        case 1: input.insert(at, 1, static_cast<char>(gen())); break;
        case 2: input.resize(at); break;
        case 3: input += seeds[gen() % seeds.size()].substr(0, gen() % 64); break;
        case 4: if (!input.empty()) input[at] ^= static_cast<char>(1u << (gen() % 8)); break;
      }
    }
    run(input);
  }
  std::printf("%zu seeds and %ld mutated inputs: all properties held\n", seeds.size(), iterations);
  return 0;
}
