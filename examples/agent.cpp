// agent: asks a language model to answer a request by writing code that runs in a sandbox, and saves the files it
// hands back.
//
//   agent "REQUEST" [--file PATH]... [--backend pyodide|e2b|bedrock] [--provider openai|anthropic]
//         [--base-url URL] [--model MODEL] [--output-dir DIR] [--max-turns N]
//
// The API key comes from OPENAI_API_KEY or ANTHROPIC_API_KEY. --base-url points at any OpenAI-compatible server
// (vLLM, llama.cpp, Ollama: e.g. http://localhost:11434/v1). Each --file is uploaded to the sandbox.
// --backend pyodide (the default) runs locally; e2b reads E2B_API_KEY (and E2B_DOMAIN, E2B_API_URL,
// E2B_SANDBOX_URL); bedrock reads the AWS_* environment and the shared AWS files (docs/backends/bedrock.md).
//
// Prints the answer, then one line per file: "saved PATH (N bytes)", "missing TARGET" (linked but absent) or
// "refused TARGET" (a link outside the sandbox's upload directory). Images the code showed (charts: plt.show(),
// display()) are saved too, as image-E-N.png / .jpg (execution E, image N, from 1). Files are saved into --output-dir (default
// ./agent_output) under their base names only, so nothing the model writes can place a file elsewhere.
// Exit status: 0 answered, 1 stopped without an answer (reason on stderr), 4 the sandbox could not start,
// 64 bad usage or a backend that is not available.
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "code_interpreter/code_interpreter.hpp"

namespace ci = code_interpreter;
namespace fs = std::filesystem;

namespace {

constexpr const char* kUsage =
    "usage: agent \"REQUEST\" [--file PATH]... [--backend pyodide|e2b|bedrock] [--provider openai|anthropic]\n"
    "             [--base-url URL] [--model MODEL] [--output-dir DIR] [--max-turns N]\n";

constexpr const char* kBackendHelp =
    "  --backend pyodide (default) runs locally; e2b reads E2B_API_KEY, E2B_DOMAIN, E2B_API_URL, E2B_SANDBOX_URL;\n"
    "  bedrock reads AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, AWS_REGION,\n"
    "  AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_BEDROCK_AGENTCORE and AWS_ENDPOINT_URL.\n";

int usage(const std::string& message) {
  std::cerr << "agent: " << message << "\n" << kUsage;
  return 64;
}

// The sandbox comes from the library's factory by name (docs/backends.md): e2b reads E2B_API_KEY, E2B_DOMAIN /
// E2B_API_URL / E2B_SANDBOX_URL; bedrock reads AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN or the
// AWS_PROFILE in the shared files, AWS_REGION / AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_BEDROCK_AGENTCORE.

std::unique_ptr<ci::LMInvoker> make_invoker(const std::string& provider, const std::string& base_url,
                                            const std::string& model) {
  if (provider == "openai") {
    ci::OpenAIChatOptions options;
    if (!base_url.empty()) options.base_url = base_url;
    options.model = model.empty() ? "gpt-4o-mini" : model;
    return std::make_unique<ci::OpenAIChatInvoker>(options);
  }
  ci::AnthropicOptions options;
  if (!base_url.empty()) options.base_url = base_url;
  options.model = model.empty() ? "claude-sonnet-4-5" : model;
  return std::make_unique<ci::AnthropicInvoker>(options);
}

// The name a returned file is saved under: its base name, or nothing when even that is not a plain name.
std::optional<std::string> safe_name(const std::string& filename) {
  const std::string name = fs::path(filename).filename().string();
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\\') != std::string::npos || name.find('\0') != std::string::npos) {
    return std::nullopt;
  }
  return name;
}

// Writes beside the destination, then renames: an existing symlink there is replaced, never written through. The
// temporary file is created exclusively ("x": O_CREAT | O_EXCL) under a random name, so a file or symlink already
// sitting at a predictable name (left by someone else, or saved earlier in this run) is never opened or clobbered.
bool save(const fs::path& destination, const std::string& data) {
  std::random_device random;
  for (int attempt = 0; attempt < 16; ++attempt) {
    const fs::path temporary =
        destination.parent_path() / (".agent-" + std::to_string(random()) + std::to_string(random()) + ".partial");
    std::FILE* out = std::fopen(temporary.c_str(), "wbx");
    if (!out) {
      if (errno == EEXIST) continue;
      return false;
    }
    const bool written = std::fwrite(data.data(), 1, data.size(), out) == data.size();
    const bool closed = std::fclose(out) == 0;
    std::error_code ec;
    if (written && closed) {
      fs::rename(temporary, destination, ec);
      if (!ec) return true;
    }
    fs::remove(temporary, ec);
    return false;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<std::string> request;
  std::vector<std::string> files;
  std::string backend = "pyodide", provider = "openai", base_url, model, output_dir = "agent_output";
  int max_turns = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool takes_value = arg == "--file" || arg == "--backend" || arg == "--provider" || arg == "--base-url" ||
                             arg == "--model" || arg == "--output-dir" || arg == "--max-turns";
    if (takes_value && i + 1 >= argc) return usage(std::string(arg) + " needs a value");
    if (arg == "--file") {
      files.emplace_back(argv[++i]);
    } else if (arg == "--backend") {
      backend = argv[++i];
    } else if (arg == "--provider") {
      provider = argv[++i];
      if (provider != "openai" && provider != "anthropic") return usage("--provider is openai or anthropic");
    } else if (arg == "--base-url") {
      base_url = argv[++i];
    } else if (arg == "--model") {
      model = argv[++i];
    } else if (arg == "--output-dir") {
      output_dir = argv[++i];
    } else if (arg == "--max-turns") {
      const std::string_view text = argv[++i];
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), max_turns);
      if (ec != std::errc() || end != text.data() + text.size() || max_turns < 1 || max_turns > 1000) {
        return usage("--max-turns takes a number from 1 to 1000");
      }
    } else if (arg == "-h" || arg == "--help") {
      std::cout << kUsage << kBackendHelp;
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      return usage("unknown option " + std::string(arg));
    } else {
      if (request) return usage("give one request");
      request = std::string(arg);
    }
  }
  if (!request) return usage("no request given");

  std::vector<ci::Attachment> attachments;
  try {
    for (const auto& file : files) attachments.push_back(ci::Attachment::from_file(file));
  } catch (const std::invalid_argument& e) {
    return usage(e.what());
  }

  std::unique_ptr<ci::LMInvoker> invoker;
  try {
    invoker = make_invoker(provider, base_url, model);
  } catch (const ci::LMInvocationError& e) {
    return usage(e.what());
  }

  std::unique_ptr<ci::CodeInterpreterSandbox> sandbox;
  try {
    ci::SandboxConfig config;
    config.backend = backend;
    sandbox = ci::create_sandbox(config);
  } catch (const ci::CodeInterpreterError& e) {
    // A backend name the factory does not know is a usage error, like any other bad argument.
    if (e.stage() == ci::Stage::kConfigure && std::string_view(e.what()).rfind("configuration: ", 0) == 0)
      return usage(e.what());
    std::cerr << "agent: the sandbox could not start (" << ci::to_string(e.stage()) << "): " << e.what() << "\n";
    return 4;
  }

  ci::InterpreterOptions options;
  options.max_turns = max_turns;
  ci::InterpreterResult result;
  try {
    result = ci::SandboxCodeInterpreter(*sandbox, *invoker, options).execute(*request, std::move(attachments));
  } catch (const std::invalid_argument& e) {
    return usage(e.what());
  }

  std::cout << result.text << "\n";
  if (!result.code_exec_results.empty() && !result.code_exec_results.back().output.empty()) {
    std::error_code ec;
    fs::create_directories(output_dir, ec);
    std::set<std::string> saved;
    for (const auto& file : result.code_exec_results.back().output) {
      const auto name = safe_name(file.filename);
      if (!name || !saved.insert(*name).second) {
        std::cout << "skipped " << file.filename << " (not a plain name, or a name already saved)\n";
        continue;
      }
      const fs::path destination = fs::path(output_dir) / *name;
      if (save(destination, file.data)) {
        std::cout << "saved " << destination.string() << " (" << file.data.size() << " bytes)\n";
      } else {
        std::cout << "failed " << destination.string() << "\n";
      }
    }
  }
  // The images every execution showed, in order.
  for (std::size_t e = 0; e < result.code_exec_results.size(); ++e) {
    std::size_t n = 0;
    for (const auto& rich : result.code_exec_results[e].result.results) {
      for (const auto& [mime, extension] : {std::pair{"image/png", ".png"}, std::pair{"image/jpeg", ".jpg"}}) {
        const auto bytes = ci::rich_data_bytes(rich, mime);
        if (!bytes) continue;
        std::error_code ec;
        fs::create_directories(output_dir, ec);
        const fs::path destination =
            fs::path(output_dir) / ("image-" + std::to_string(e + 1) + "-" + std::to_string(++n) + extension);
        if (save(destination, *bytes)) {
          std::cout << "saved " << destination.string() << " (" << bytes->size() << " bytes)\n";
        } else {
          std::cout << "failed " << destination.string() << "\n";
        }
        break;
      }
    }
  }
  for (const auto& target : result.missing_files) std::cout << "missing " << target << "\n";
  for (const auto& target : result.refused_links) std::cout << "refused " << target << "\n";

  if (result.stop_reason != ci::StopReason::kAnswered) {
    std::cerr << "agent: stopped (" << ci::to_string(result.stop_reason) << ") after " << result.turns
              << " model calls\n";
    return 1;
  }
  std::cerr << "agent: " << result.turns << " model calls, " << result.code_exec_results.size() << " executions, "
            << result.usage.input_tokens << " input and " << result.usage.output_tokens << " output tokens\n";
  return 0;
}
