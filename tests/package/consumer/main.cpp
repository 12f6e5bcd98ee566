// A program built outside the project against an installed code_interpreter: it must find the Pyodide runtime
// with default options and no environment variable.
#include <iostream>

#include <code_interpreter/code_interpreter.hpp>
#include <code_interpreter/json.hpp>

int main() {
  namespace ci = code_interpreter;
  auto sandbox = ci::PyodideSandbox::create();
  const auto result = sandbox->execute_code("import statistics\nprint(statistics.mean([1, 2, 3, 4]))\n6 * 7");
  std::cout << result.stdout_text << result.results.at(0).data.at("text/plain") << "\n"
            << nlohmann::json(result)["status"].get<std::string>() << "\n";
  return result.status == ci::ExecutionStatus::kSuccess ? 0 : 1;
}
