#include <catch2/catch.hpp>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <sstream>

#include "code_interpreter/logging.hpp"

namespace ci = code_interpreter;

TEST_CASE("the default logger is 'code_interpreter' at level warn, writing to stderr only", "[logging]") {
  ci::set_logger(nullptr);
  const auto log = ci::logger();
  REQUIRE(log != nullptr);
  CHECK(log->name() == "code_interpreter");
  CHECK(log->level() == spdlog::level::warn);
  REQUIRE(log->sinks().size() == 1);
  CHECK(dynamic_cast<spdlog::sinks::stderr_sink_mt*>(log->sinks()[0].get()) != nullptr);
}

TEST_CASE("set_logger replaces the logger and nullptr restores the default", "[logging]") {
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  auto mine = std::make_shared<spdlog::logger>("mine", sink);
  mine->set_pattern("%l %v");
  ci::set_logger(mine);
  CHECK(ci::logger() == mine);
  ci::logger()->warn("routed {}", 42);
  CHECK(captured.str() == "warning routed 42\n");
  ci::set_logger(nullptr);
  CHECK(ci::logger()->name() == "code_interpreter");
  CHECK(ci::logger() != mine);
}
