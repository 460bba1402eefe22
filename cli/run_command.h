// How nvfp4-verify runs its command line: whatever a command throws ends as one line on stderr
// and exit status 2, never an abort. The project's errors (reference/exception.h) print their
// message; any other exception, of any type, says it was unexpected.
#pragma once

#include <cstdio>

#include <CLI/CLI.hpp>

namespace nvfp4::cli {

// Parses argv into `app` and runs the chosen command; returns `exit_code` (which the command may
// have set), CLI11's status for --help and --version, or 2 with one line on `err` for anything
// thrown.
int run_command(CLI::App& app, int argc, const char* const* argv, const int& exit_code, std::FILE* err = stderr);

}  // namespace nvfp4::cli
