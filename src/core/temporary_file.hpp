// The one download-to-a-temporary-then-rename routine (docs/errors.md "File guards"): a download_file_to never leaves a
// partial file at its destination, and a Pyodide snapshot image is never seen half written. The bytes go to
// "<destination>.part-<random>" beside it, and only a complete file is renamed into place; anything else removes the
// temporary file.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>

namespace code_interpreter::detail {

/// Opens the temporary file, lets `fill` write the content to it and say whether the content is complete, and
/// renames it onto `destination` when `fill` returned true and every write succeeded. Returns whether the
/// destination now holds the file; on false the temporary file is gone and the destination untouched.
bool write_via_temporary(const std::filesystem::path& destination, const std::function<bool(std::ofstream&)>& fill);

}  // namespace code_interpreter::detail
