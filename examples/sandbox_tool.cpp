// The C++ example of docs/agents.md ("The tool from C++"): the lines between the snippet markers are the document's
// code block, word for word (tests/mcp/tool_test.cpp checks it), so the document's code is compiled with the examples.
// [snippet]
#include <code_interpreter/code_interpreter.hpp>

namespace ci = code_interpreter;

int main() {
  auto sandbox = ci::PyodideSandbox::create();
  ci::SandboxToolOptions options;
  options.max_timeout = std::chrono::seconds(120);  // offer `timeout`, at most 120 s
  options.file_arguments = true;                    // offer `files`
  const ci::SandboxTool tool(*sandbox, options);

  const ci::ToolDefinition definition = tool.definition();  // name, description, parameters (JSON Schema text)
  // ... give `definition` to the model; when it calls the tool with arguments (JSON text):
  const ci::ToolResult result = tool.call(R"j({"code": "print(6 * 7)"})j");
  // result.text == "42", result.is_error == false, result.images empty, result.execution holds the ExecutionResult
  return result.is_error ? 1 : 0;
}
// [snippet]
