// `nvfp4-verify seed-corpus --output DIR`: writes the seed corpus (cases/seeds/) into DIR,
// one content-named case file per case. Files already there are kept (same content, same name);
// nothing is overwritten or deleted.
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "cases/corpus.h"
#include "cases/seeds/seed_corpus.h"
#include "cli/commands.h"
#include "io/output_path.h"

namespace nvfp4::cli {

void register_seed_corpus(CLI::App& app) {
  auto output = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("seed-corpus", "Write the seed corpus of small cases (NUMERICS.md §5-§6 classes) into a directory");
  cmd->add_option("--output", *output, "corpus directory (created if needed), e.g. corpora/seed")->required();
  cmd->callback([output] {
    const std::filesystem::path dir(*output);
    io::prepare_output_directory(dir, "--output");
    const std::vector<cases::CaseRecord> cases = cases::seed_corpus();
    std::set<std::filesystem::path> seen;  // files there before (save_case never overwrites them)
    if (std::filesystem::is_directory(dir))
      for (const auto& e : std::filesystem::directory_iterator(dir)) seen.insert(e.path());
    std::size_t written = 0, present = 0;
    std::uintmax_t bytes = 0;
    for (const cases::CaseRecord& r : cases) {
      const std::filesystem::path p = cases::save_case(dir, r);
      (seen.insert(p).second ? written : present) += 1;
      bytes += std::filesystem::file_size(p);
    }
    fmt::print("seed-corpus: {} cases ({} bytes) in {}: {} written, {} already present\n", cases.size(), bytes, *output, written,
               present);
  });
}

}  // namespace nvfp4::cli
