// The readers of other people's files, fuzzed: the seed corpus's case files, mutated (bit flips,
// truncations, the header length and the header's numbers set to edge and huge values, dtypes
// swapped, bytes appended), must each either load or throw io::FormatError, the project's input
// error: never another exception, a crash (the sanitizer build, scripts/sanitize, runs this too),
// or an allocation above kAllocationCap. A RapidCheck property, so that a failure shrinks to one
// seed file and the fewest mutations.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <string>
#include <vector>

#include "cases/case_io.h"
#include "io/safetensors.h"
#include "tests/support/temp_dir.h"

namespace {

// The largest single allocation a reader may make while the cap is on: a recipe's limit (256 MiB
// of binary32) with room for its narrowed copy, far below what an unchecked size asks for.
constexpr std::size_t kAllocationCap = std::size_t{1} << 30;
thread_local bool cap_on = false;
thread_local bool cap_hit = false;

void* allocate(std::size_t n) {
  if (cap_on && n > kAllocationCap) {
    cap_hit = true;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

}  // namespace

// This test program's allocation functions (replaceable, [new.delete]; hence a program of its
// own): malloc and free, with the cap above. Every form but the aligned ones is replaced, so that
// each new pairs with its delete (under ASan too).
void* operator new(std::size_t n) { return allocate(n); }
void* operator new[](std::size_t n) { return allocate(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return allocate(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

// A case file that stores only the description: its recipes are expanded when it is read, so
// that mutated recipe sizes reach the generator.
Bytes without_recipe_tensors(const Bytes& file) {
  io::File f = io::parse(file, "seed");
  const cases::CaseRecord r = cases::case_from_file(f, "seed");
  for (const auto& [name, recipe] : r.recipes) f.tensors.erase(name);
  return io::serialize(f);
}

// Valid files to mutate: the seed corpus's smaller case files (every operation has one), those
// with recipes once more without their stored tensors, and a plain safetensors file.
const std::vector<Bytes>& seeds() {
  static const std::vector<Bytes> files = [] {
    std::vector<fs::path> paths;
    for (const auto& e : fs::directory_iterator(fs::path(NVFP4_SOURCE_DIR) / "corpora" / "seed"))
      if (e.path().extension() == ".safetensors") paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
    std::vector<Bytes> out;
    constexpr std::size_t kSmall = 16384;  // small files keep each mutated read quick
    for (const fs::path& p : paths) {
      std::ifstream in(p, std::ios::binary);
      const Bytes file{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      if (file.size() < kSmall) out.push_back(file);
      if (const Bytes bare = without_recipe_tensors(file); bare.size() < file.size() && bare.size() < kSmall) out.push_back(bare);
    }
    io::File plain;
    plain.tensors["w"] = io::make_tensor(io::DType::BF16, {2, 16}, Bytes(64, 0x3F));
    plain.tensors["e"] = io::make_tensor(io::DType::F32, {0, 16}, {});
    plain.tensors["s"] = io::make_tensor(io::DType::U8, {}, Bytes{7});
    plain.metadata["format"] = "pt";
    out.push_back(io::serialize(plain));
    return out;
  }();
  return files;
}

enum class Kind { kFlipBit, kTruncate, kHeaderLength, kHeaderNumber, kHeaderNumberKeepLength, kDtype, kAppend };

struct Mutation {
  Kind kind = Kind::kFlipBit;
  std::uint32_t where = 0;  // which bit, byte, number or name, modulo their count
  std::uint64_t value = 0;  // the new value, for the kinds that take one
};

// Sizes that break readers: edges of 16, 2^16 (the empty-tensor limit), 2^31, 2^32, 2^48 (whose
// product with 2^16 wraps 64 bits), 2^62, 2^63 - 1 and 2^64 - 1.
rc::Gen<std::uint64_t> edge_value() {
  return rc::gen::weightedOneOf<std::uint64_t>(
      {{3,
        rc::gen::elementOf(std::vector<std::uint64_t>{0, 1, 15, 16, 17, 24, 128, 65536, 65537, 1ull << 20, 1ull << 28, 1ull << 31,
                                                      1ull << 32, 1ull << 40, 1ull << 48, 1ull << 62, (1ull << 63) - 1, ~0ull})},
       {1, rc::gen::arbitrary<std::uint64_t>()}});
}

}  // namespace
}  // namespace nvfp4

namespace rc {
template <>
struct Arbitrary<nvfp4::Mutation> {
  static Gen<nvfp4::Mutation> arbitrary() {
    using nvfp4::Kind;
    return gen::build<nvfp4::Mutation>(
        gen::set(&nvfp4::Mutation::kind, gen::element(Kind::kFlipBit, Kind::kTruncate, Kind::kHeaderLength, Kind::kHeaderNumber,
                                                      Kind::kHeaderNumberKeepLength, Kind::kDtype, Kind::kAppend)),
        gen::set(&nvfp4::Mutation::where, gen::arbitrary<std::uint32_t>()),
        gen::set(&nvfp4::Mutation::value, nvfp4::edge_value()));
  }
};
}  // namespace rc

namespace nvfp4 {
namespace {

std::uint64_t header_length(const Bytes& b) {
  std::uint64_t n = 0;
  for (int i = 0; i < 8 && i < int(b.size()); ++i) n |= std::uint64_t{b[std::size_t(i)]} << (8 * i);
  return n;
}

void set_header_length(Bytes& b, std::uint64_t n) {
  for (int i = 0; i < 8 && i < int(b.size()); ++i) b[std::size_t(i)] = std::uint8_t(n >> (8 * i));
}

// The header text's [begin, end) in b, clamped to b.
std::pair<std::size_t, std::size_t> header_span(const Bytes& b) {
  const std::size_t begin = std::min<std::size_t>(8, b.size());
  return {begin, std::size_t(std::min<std::uint64_t>(b.size(), begin + header_length(b)))};
}

// Replaces b[from, to) with `text`, and moves the header length by the change when asked.
void splice(Bytes& b, std::size_t from, std::size_t to, const std::string& text, bool keep_length) {
  const std::uint64_t len = header_length(b);
  b.erase(b.begin() + std::ptrdiff_t(from), b.begin() + std::ptrdiff_t(to));
  b.insert(b.begin() + std::ptrdiff_t(from), text.begin(), text.end());
  if (keep_length) set_header_length(b, len + text.size() - (to - from));
}

// The where-th run of digits in the header (numbers of the header and of the case description).
void edit_number(Bytes& b, const Mutation& m, bool keep_length) {
  const auto [begin, end] = header_span(b);
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  for (std::size_t i = begin; i < end;) {
    if (b[i] < '0' || b[i] > '9') {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < end && b[j] >= '0' && b[j] <= '9') ++j;
    runs.emplace_back(i, j);
    i = j;
  }
  if (runs.empty()) return;
  const auto [from, to] = runs[m.where % runs.size()];
  splice(b, from, to, std::to_string(m.value), keep_length);
}

void swap_dtype(Bytes& b, const Mutation& m) {
  static const std::vector<std::string> kNames = {"F32", "BF16", "F16", "U8", "I64", "F8_E4M3", "BOOL"};
  const auto [begin, end] = header_span(b);
  std::vector<std::pair<std::size_t, std::size_t>> hits;
  const std::string text(b.begin() + std::ptrdiff_t(begin), b.begin() + std::ptrdiff_t(end));
  for (const std::string& n : kNames)
    for (std::size_t at = text.find("\"" + n + "\""); at != std::string::npos; at = text.find("\"" + n + "\"", at + 1))
      hits.emplace_back(begin + at + 1, begin + at + 1 + n.size());
  if (hits.empty()) return;
  const auto [from, to] = hits[m.where % hits.size()];
  splice(b, from, to, kNames[m.value % kNames.size()], true);
}

Bytes mutate(Bytes b, const std::vector<Mutation>& ms) {
  for (const Mutation& m : ms) {
    if (b.empty()) break;
    switch (m.kind) {
      case Kind::kFlipBit:
        b[m.where % b.size()] ^= std::uint8_t(1u << (m.value % 8));
        break;
      case Kind::kTruncate:
        b.resize(m.where % b.size());
        break;
      case Kind::kHeaderLength:
        set_header_length(b, m.value % 2 ? header_length(b) + m.value % 7 - 3 : m.value);
        break;
      case Kind::kHeaderNumber:
        edit_number(b, m, true);
        break;
      case Kind::kHeaderNumberKeepLength:
        edit_number(b, m, false);
        break;
      case Kind::kDtype:
        swap_dtype(b, m);
        break;
      case Kind::kAppend:
        b.insert(b.end(), std::size_t(1 + m.where % 16), std::uint8_t(m.value));
        break;
    }
  }
  return b;
}

// Reads b as the tools read files: whole (io::parse, then a case when it describes one), and
// one tensor at a time (io::LazyFile, through a file). FormatError is the expected refusal.
void read_as_the_tools_do(const Bytes& b, const fs::path& scratch) {
  try {
    const io::File f = io::parse(b, "fuzz");
    if (f.metadata.count("nvfp4_case")) cases::case_from_file(f, "fuzz");
  } catch (const io::FormatError&) {
  }
  {
    std::ofstream(scratch, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  }
  try {
    const io::LazyFile lazy(scratch);
    for (const auto& [name, info] : lazy.header().tensors) lazy.read(name);
  } catch (const io::FormatError&) {
  }
}

// RapidCheck's 100 runs of 24 mutated files each, of one to three mutations: 2,400 inputs.
RC_GTEST_PROP(InputFuzz, MutatedFilesLoadOrThrowFormatError, ()) {
  const std::size_t seed = *rc::gen::inRange<std::size_t>(0, seeds().size());
  const auto mutations = rc::gen::mapcat(rc::gen::inRange(1, 4), [](int n) {
    return rc::gen::container<std::vector<Mutation>>(std::size_t(n), rc::gen::arbitrary<Mutation>());
  });
  const auto batch = *rc::gen::container<std::vector<std::vector<Mutation>>>(24, mutations);
  const test_support::TempDir tmp;
  const fs::path scratch = tmp.path() / "mutated.safetensors";
  for (const std::vector<Mutation>& ms : batch) {
    const Bytes input = mutate(seeds()[seed], ms);
    cap_hit = false;
    cap_on = true;
    std::string other;
    try {
      read_as_the_tools_do(input, scratch);
    } catch (const std::exception& e) {
      other = e.what();
    }
    cap_on = false;
    RC_ASSERT(!cap_hit);
    RC_ASSERT(other == "");
  }
}

TEST(InputFuzz, SeedsAreValidFilesAndMutationsChangeThem) {
  ASSERT_GE(seeds().size(), 20u);
  for (const Bytes& s : seeds()) {
    const io::File f = io::parse(s, "seed");
    if (f.metadata.count("nvfp4_case")) EXPECT_NO_THROW(cases::case_from_file(f, "seed"));
  }
  // A number edit keeps the header length in step: the edited file is still a file, whose
  // first number (the first tensor's first data offset) is now 2^48.
  const Bytes& s = seeds().back();
  const Bytes edited = mutate(s, {{Kind::kHeaderNumber, 0, 1ull << 48}});
  EXPECT_NE(edited, s);
  EXPECT_EQ(header_length(edited) + 8, header_length(s) + 8 + edited.size() - s.size());
  try {
    io::parse(edited, "edited");
    ADD_FAILURE() << "a 2^48 dimension was accepted";
  } catch (const io::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("281474976710656"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nvfp4
