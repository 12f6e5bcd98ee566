#include "code_interpreter/logging.hpp"

#include <atomic>
#include <mutex>

#include <spdlog/sinks/stdout_sinks.h>

namespace code_interpreter {

namespace {
std::shared_ptr<spdlog::logger> make_default() {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto log = std::make_shared<spdlog::logger>("code_interpreter", std::move(sink));
  log->set_level(spdlog::level::warn);
  return log;
}

std::mutex& logger_mutex() {
  static std::mutex m;
  return m;
}

std::shared_ptr<spdlog::logger>& current() {
  static std::shared_ptr<spdlog::logger> log = make_default();
  return log;
}
}  // namespace

std::shared_ptr<spdlog::logger> logger() {
  std::lock_guard lock(logger_mutex());
  return current();
}

void set_logger(std::shared_ptr<spdlog::logger> replacement) {
  std::lock_guard lock(logger_mutex());
  current() = replacement ? std::move(replacement) : make_default();
}

}  // namespace code_interpreter
