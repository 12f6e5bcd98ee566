// Everything but json.hpp and logging.hpp (which pull in nlohmann and spdlog).
#pragma once

#include "code_interpreter/errors.hpp"
#include "code_interpreter/anthropic_invoker.hpp"
#include "code_interpreter/bedrock_sandbox.hpp"
#include "code_interpreter/e2b_sandbox.hpp"
#include "code_interpreter/execution.hpp"
#include "code_interpreter/factory.hpp"
#include "code_interpreter/interpreter.hpp"
#include "code_interpreter/management.hpp"
#include "code_interpreter/openai_invoker.hpp"
#include "code_interpreter/process.hpp"
#include "code_interpreter/pyodide_packages.hpp"
#include "code_interpreter/pyodide_pool.hpp"
#include "code_interpreter/pyodide_sandbox.hpp"
#include "code_interpreter/sandbox.hpp"
#include "code_interpreter/tool.hpp"
#include "code_interpreter/mcp_server.hpp"
