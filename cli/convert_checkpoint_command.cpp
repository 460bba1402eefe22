// `nvfp4-verify convert-checkpoint --input HF_DIR --output OUT_DIR --format modelopt|compressed-tensors|miles [--profile P]
// [--exclude PATTERN ...] [--backend reference|device] [--threads N]`: a BF16 Hugging Face model to
// an NVFP4 checkpoint (checkpoint/convert.h, docs/guides/checkpoints.md#commands). Exit 0, or 2 for bad
// input with nothing written at OUT_DIR.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/convert.h"
#include "cli/backends.h"
#include "cli/commands.h"
#include "io/output_path.h"
#include "reference/row_threads.h"

namespace nvfp4::cli {
namespace {

struct ConvertArgs {
  std::string input, output, format, profile, backend = "reference";
  std::vector<std::string> excludes;
  int threads = 0;  // 0: not given, one per hardware thread
  bool threads_given = false;
};

// One carriage-returned line on a terminal: tensors, bytes, throughput and the time left.
class ProgressLine {
 public:
  void operator()(const checkpoint::ConvertProgress& p) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double mb = double(p.bytes_done) / 1e6, rate = s > 0 ? mb / s : 0;
    const double left = rate > 0 ? double(p.bytes_total - p.bytes_done) / 1e6 / rate : 0;
    std::fprintf(stderr, "\rconvert-checkpoint: %zu/%zu tensors, %.1f/%.1f MB, %.1f MB/s, %.0f s left   ", p.tensors_done,
                 p.tensors_total, mb, double(p.bytes_total) / 1e6, rate, left);
    if (p.tensors_done == p.tensors_total) std::fputc('\n', stderr);
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

void convert(const ConvertArgs& a) {
  check_threads(a.threads_given, a.threads);
  const auto format = checkpoint::find_format(a.format);
  if (!format)
    throw UsageError(fmt::format("--format {}: not supported; supported: {}", a.format, checkpoint::supported_formats()));
  if (std::filesystem::exists(std::filesystem::symlink_status(a.output)))
    throw UsageError(fmt::format("--output {}: already exists; give a directory that does not exist yet", a.output));
  io::prepare_output_directory(a.output, "--output");
  std::unique_ptr<cases::Backend> backend = make_backend(a.backend);
  const std::string profile = a.profile.empty() ? format->default_profile : a.profile;
  checkpoint::ConvertOptions o{a.input, a.output, *format, profile, a.excludes};
  std::function<void(const checkpoint::ConvertProgress&)> progress;
  if (::isatty(STDERR_FILENO)) progress = ProgressLine();
  // Tensors are converted one at a time, in the source's order, whatever N: N caps the reference's
  // threads over the rows of one tensor, whose results do not depend on it.
  const RowThreadLimit limit(a.threads);
  const checkpoint::ConvertSummary s = checkpoint::convert_checkpoint(o, *backend, progress);
  std::printf("convert-checkpoint: wrote %s (%s, profile %s): %zu weights quantized, %zu tensors kept, %zu shard(s)\n",
              a.output.c_str(), format->name.c_str(), profile.c_str(), s.quantized, s.kept, s.shards);
  if (s.quantized == 0)
    std::printf("convert-checkpoint: format %s quantizes none of the tensors of %s%s\n", format->name.c_str(), a.input.c_str(),
                format->quantized_within.empty() ? "" : " (it quantizes MoE expert linears only)");
}

}  // namespace

void register_convert_checkpoint(CLI::App& app) {
  auto a = std::make_shared<ConvertArgs>();
  CLI::App* cmd = app.add_subcommand("convert-checkpoint", "Convert a BF16 Hugging Face model to an NVFP4 checkpoint");
  cmd->add_option("--input", a->input, "the Hugging Face model directory")->required();
  cmd->add_option("--output", a->output, "the directory to write (must not exist)")->required();
  cmd->add_option("--format", a->format, "checkpoint format: " + checkpoint::supported_formats())->required();
  cmd->add_option("--profile", a->profile,
                  "numerics profile (see `nvfp4-verify profiles`; default: the format's, modelopt or te-pyref)");
  cmd->add_option("--exclude", a->excludes, "keep modules matching this fnmatch pattern unquantized (repeatable)");
  add_output_backend_option(cmd, a->backend);
  CLI::Option* threads = cmd->add_option(
      "--threads", a->threads,
      "threads of the reference over the rows of one tensor (default: one per hardware thread); the output does not "
      "depend on it");
  cmd->callback([a, threads] {
    a->threads_given = threads->count() > 0;
    convert(*a);
    std::fflush(stdout);
  });
}

}  // namespace nvfp4::cli
