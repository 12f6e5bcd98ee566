// Everything but json.hpp and logging.hpp (which pull in nlohmann and spdlog).
#pragma once

#include "code_interpreter/errors.hpp"
#include "code_interpreter/execution.hpp"
#include "code_interpreter/pyodide_sandbox.hpp"
#include "code_interpreter/sandbox.hpp"
