// The nvfp4-verify subcommands. Each registers itself on the app; its callback checks its output
// paths before any work (io/output_path.h) and throws on bad input (nvfp4::UsageError, an
// InputError, an OutputError: reference/exception.h), which run_command() turns into one line on
// stderr and exit code 2.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "reference/exception.h"

namespace nvfp4::cli {

// A binary32 option value: a decimal float (inf and nan included) or a bit pattern 0xXXXXXXXX;
// UsageError naming the option otherwise.
float parse_f32(std::string_view option, const std::string& text);

// --rht-mask: 0x-prefixed hex or decimal, at most 16 bits; UsageError otherwise.
std::uint64_t parse_rht_mask(const std::string& text);

// --threads N of convert-checkpoint and check-checkpoint: when given, N >= 1; UsageError otherwise.
inline void check_threads(bool given, int n) {
  if (given && n < 1)
    throw UsageError("--threads " + std::to_string(n) + ": must be at least 1 (leave it out for one thread per hardware thread)");
}

void register_quantize(CLI::App& app);
void register_dequantize(CLI::App& app);
void register_profiles(CLI::App& app);
void register_ops(CLI::App& app);
void register_selfcheck(CLI::App& app, int& exit_code);
void register_bench(CLI::App& app, int& exit_code);
void register_fuzz(CLI::App& app, int& exit_code);
void register_gate(CLI::App& app, int& exit_code);
void register_merge(CLI::App& app, int& exit_code);
void register_replay(CLI::App& app, int& exit_code);
void register_vectors(CLI::App& app, int& exit_code);
void register_worker_selftest(CLI::App& app, int& exit_code);
void register_check(CLI::App& app, int& exit_code);
void register_seed_corpus(CLI::App& app);
void register_cast_master_weights(CLI::App& app);
void register_rht(CLI::App& app);
void register_gemm(CLI::App& app);
void register_convert_checkpoint(CLI::App& app);
void register_check_checkpoint(CLI::App& app, int& exit_code);

}  // namespace nvfp4::cli
