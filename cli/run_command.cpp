#include "cli/run_command.h"

#include <exception>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "reference/exception.h"

namespace nvfp4::cli {
namespace {

// One line whatever the message holds: a line break becomes a space.
int fail(std::FILE* err, std::string_view prefix, std::string_view message) {
  std::string line(message);
  for (char& ch : line)
    if (ch == '\n' || ch == '\r') ch = ' ';
  if (line.empty()) line = "(an error without a message)";
  fmt::print(err, "nvfp4-verify: {}{}\n", prefix, line);
  std::fflush(err);
  return 2;
}

}  // namespace

int run_command(CLI::App& app, int argc, const char* const* argv, const int& exit_code, std::FILE* err) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(err, "", e.what());
  } catch (const Exception& e) {
    return fail(err, "", e.what());
  } catch (const std::exception& e) {  // a bug, or a library's error no command turned into its own
    return fail(err, "unexpected error: ", e.what());
  } catch (...) {
    return fail(err, "unexpected error: ", "an exception of unknown type");
  }
  return exit_code;
}

}  // namespace nvfp4::cli
