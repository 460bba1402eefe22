// nvfp4-verify: command-line entry point.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/run_command.h"
#include "cli/version.h"

#if !NVFP4_WITH_FUZZ
namespace {

// A command of a build without fuzz/ (no RapidCheck): listed, and says so when run.
void register_missing_campaign_command(CLI::App& app, const char* name) {
  CLI::App* cmd = app.add_subcommand(name, "(not built: needs RapidCheck)");
  cmd->allow_extras();
  cmd->callback([name] {
    throw nvfp4::UsageError(
        fmt::format("{}: this nvfp4-verify was built without RapidCheck, which case generation needs; install it "
                    "(Debian: librapidcheck-dev) and rebuild",
                    name));
  });
}

}  // namespace
#endif

int main(int argc, char** argv) {
  CLI::App app{"nvfp4-verify: bit-exact NVFP4 reference emulator and correctness gate"};
  app.set_version_flag("--version", nvfp4::cli::version_line());
  app.require_subcommand(1);
  int exit_code = 0;
  nvfp4::cli::register_quantize(app);
  nvfp4::cli::register_dequantize(app);
  nvfp4::cli::register_profiles(app);
  nvfp4::cli::register_ops(app);
  nvfp4::cli::register_selfcheck(app, exit_code);
  nvfp4::cli::register_bench(app, exit_code);
#if NVFP4_WITH_FUZZ
  nvfp4::cli::register_fuzz(app, exit_code);
  nvfp4::cli::register_gate(app, exit_code);
  nvfp4::cli::register_merge(app, exit_code);
  nvfp4::cli::register_worker_selftest(app, exit_code);
#else
  register_missing_campaign_command(app, "fuzz");
  register_missing_campaign_command(app, "gate");
  register_missing_campaign_command(app, "merge");
  register_missing_campaign_command(app, "worker-selftest");
#endif
  nvfp4::cli::register_replay(app, exit_code);
  nvfp4::cli::register_vectors(app, exit_code);
  nvfp4::cli::register_check(app, exit_code);
  nvfp4::cli::register_seed_corpus(app);
  nvfp4::cli::register_cast_master_weights(app);
  nvfp4::cli::register_rht(app);
  nvfp4::cli::register_gemm(app);
  nvfp4::cli::register_convert_checkpoint(app);
  nvfp4::cli::register_check_checkpoint(app, exit_code);
  return nvfp4::cli::run_command(app, argc, argv, exit_code);
}
