// Converting a BF16 Hugging Face model to an NVFP4 checkpoint format in two streaming passes: the
// global amax of every quantized weight, then each weight quantized with its shared-amax group's
// amax. Tensors are read, converted and written one at a time; shards mirror the source's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "cases/case.h"
#include "checkpoint/format.h"

namespace nvfp4::checkpoint {

struct ConvertOptions {
  std::filesystem::path input, output;
  CheckpointFormat format;
  std::string profile;
  std::vector<std::string> excludes;  // fnmatch patterns over module names
};

struct ConvertProgress {
  std::size_t tensors_done = 0, tensors_total = 0;
  std::uint64_t bytes_done = 0, bytes_total = 0;  // source bytes
};

struct ConvertSummary {
  std::size_t quantized = 0, kept = 0, shards = 0;
};

// Writes everything into a hidden temporary directory beside `output` and renames it to `output`
// at the end (io/atomic_directory.h); on any error the temporary directory is removed and nothing
// is left at `output`. Throws cli-independent errors: io::FormatError (bad input), nvfp4::Error
// (an unknown profile, a weight the backend rejects), OutputError (cannot write there), and for an
// existing `output` an io::FormatError saying so.
ConvertSummary convert_checkpoint(const ConvertOptions& o, cases::Backend& backend,
                                  const std::function<void(const ConvertProgress&)>& progress = {});

}  // namespace nvfp4::checkpoint
