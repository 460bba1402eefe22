// nvfp4-verify: command-line entry point.
#include <cstdio>

#include <fmt/format.h>

#include "cli/commands.h"
#include "io/safetensors.h"
#include "reference/error.h"

int main(int argc, char** argv) {
  CLI::App app{"nvfp4-verify: bit-exact NVFP4 reference emulator and correctness gate"};
  app.set_version_flag("--version", "nvfp4-verify " NVFP4_VERSION);
  app.require_subcommand(1);
  int exit_code = 0;
  nvfp4::cli::register_quantize(app);
  nvfp4::cli::register_dequantize(app);
  nvfp4::cli::register_profiles(app);
  nvfp4::cli::register_ops(app);
  nvfp4::cli::register_selfcheck(app, exit_code);
  nvfp4::cli::register_bench(app, exit_code);
  nvfp4::cli::register_fuzz(app, exit_code);
  nvfp4::cli::register_gate(app, exit_code);
  nvfp4::cli::register_replay(app, exit_code);
  nvfp4::cli::register_seed_corpus(app);
  nvfp4::cli::register_cast_master_weights(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "nvfp4-verify: {}\n", e.what());
    return 2;
  } catch (const nvfp4::Error& e) {
    fmt::print(stderr, "nvfp4-verify: {}\n", e.what());
    return 2;
  } catch (const nvfp4::io::FormatError& e) {
    fmt::print(stderr, "nvfp4-verify: {}\n", e.what());
    return 2;
  } catch (const nvfp4::cli::UsageError& e) {
    fmt::print(stderr, "nvfp4-verify: {}\n", e.what());
    return 2;
  }
  return exit_code;
}
