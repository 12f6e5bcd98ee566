// The library's logger: spdlog logger "code_interpreter", level warn by default, writing to stderr (never stdout,
// which belongs to the host program). Replace it to route the library's messages elsewhere.
#pragma once

#include <memory>

#include <spdlog/logger.h>

#include "code_interpreter/export.hpp"

namespace code_interpreter {

/// The logger every part of the library writes to. Never null.
CODE_INTERPRETER_EXPORT std::shared_ptr<spdlog::logger> logger();

/// Replaces the library's logger; nullptr restores the default (stderr, level warn).
CODE_INTERPRETER_EXPORT void set_logger(std::shared_ptr<spdlog::logger> replacement);

}  // namespace code_interpreter
