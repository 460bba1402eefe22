// Where outputs go. A command checks each of its output paths before it does any work, so that an
// output that cannot be written ends it at once with one line rather than after a campaign.
// Outputs are written under a temporary name beside their target (io/atomic_file.h,
// io/atomic_directory.h): hidden, ".<name>.nvfp4-tmp-<pid>-<n>-<random>", so that a directory
// listing or a corpus scan never takes one for an output; the checks below also remove the
// temporaries that an interrupted writer (killed, power lost) left, once its process is gone.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string_view>

namespace nvfp4::io {

// A file can be written at `path`: its directory exists and takes a new file, and `path` is not a
// directory or another kind of non-regular file. Removes stale temporaries from that directory.
// Throws OutputError "<label> <path>: <why>" (label: the option, e.g. "--output").
void prepare_output_file(const std::filesystem::path& path, std::string_view label);

// A directory can be filled at `dir`: it is a directory that takes new entries, or it can be
// created (its nearest existing ancestor is a directory that takes new entries). Removes stale
// temporaries from it and from the directory that holds it. Throws OutputError as above.
void prepare_output_directory(const std::filesystem::path& dir, std::string_view label);

// A fresh temporary name beside `target` (same directory), unique per process and call.
std::filesystem::path temporary_path(const std::filesystem::path& target);

// Removes from `dir` the temporaries whose writing process no longer runs (on this machine);
// returns how many. Best effort: an entry that cannot be removed stays.
std::size_t remove_stale_temporaries(const std::filesystem::path& dir);

}  // namespace nvfp4::io
