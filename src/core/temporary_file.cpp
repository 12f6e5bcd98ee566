#include "core/temporary_file.hpp"

#include "core/random_id.hpp"

namespace code_interpreter::detail {

bool write_via_temporary(const std::filesystem::path& destination, const std::function<bool(std::ofstream&)>& fill) {
  const auto partial = std::filesystem::path(destination.string() + ".part-" + random_hex(4));
  std::ofstream out(partial, std::ios::binary | std::ios::trunc);
  if (!out) return false;
  const bool complete = fill(out);
  out.close();
  std::error_code ec;
  if (!complete || !out) {
    std::filesystem::remove(partial, ec);
    return false;
  }
  std::filesystem::rename(partial, destination, ec);
  if (ec) std::filesystem::remove(partial, ec);
  return !ec;
}

}  // namespace code_interpreter::detail
