#include "io/safetensors.h"
#include "tests/support/temp_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace nvfp4::io {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

// Builds a safetensors image by hand from the spec: u64 LE header length,
// header text, data.
Bytes build(const std::string& header, const Bytes& data = {}) {
  Bytes out;
  out.reserve(8 + header.size() + data.size());
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::uint64_t header_length(const Bytes& b) {
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= std::uint64_t{b[i]} << (8 * i);
  return n;
}

// Asserts that parsing `bytes` throws a one-line FormatError that names the
// origin and contains `phrase`.
void expect_parse_error(const Bytes& bytes, const std::string& phrase) {
  try {
    parse(bytes, "buf.safetensors");
    ADD_FAILURE() << "expected FormatError containing: " << phrase;
  } catch (const FormatError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("buf.safetensors: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(phrase), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

Bytes random_bytes(std::mt19937_64& rng, std::size_t n) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  return b;
}

std::size_t numel_of(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

void expect_same(const File& a, const File& b) {
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [name, t] : a.tensors) {
    auto it = b.tensors.find(name);
    ASSERT_NE(it, b.tensors.end()) << name;
    EXPECT_EQ(t.dtype, it->second.dtype) << name;
    EXPECT_EQ(t.shape, it->second.shape) << name;
    EXPECT_EQ(t.bytes, it->second.bytes) << name;
  }
}

// A file with every dtype, random shapes and data, plus empty and scalar
// tensors and metadata.
File random_file() {
  std::random_device rd;
  const auto seed = (std::uint64_t{rd()} << 32) | rd();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  File f;
  const DType all[] = {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,     DType::I32,
                       DType::I16, DType::I8,  DType::U8,  DType::BOOL, DType::F8_E4M3, DType::F8_E5M2};
  for (DType d : all) {
    std::vector<std::int64_t> shape;
    for (std::uint64_t r = 1 + rng() % 3; r > 0; --r) shape.push_back(1 + rng() % 7);
    f.tensors["t." + std::string(dtype_name(d))] = make_tensor(d, shape, random_bytes(rng, numel_of(shape) * dtype_size(d)));
  }
  f.tensors["empty"] = make_tensor(DType::F32, {3, 0, 2}, {});
  f.tensors["scalar"] = make_tensor(DType::BF16, {}, random_bytes(rng, 2));
  f.metadata = {{"format", "pt"}, {"seed", std::to_string(seed)}, {"note", "ünïcode"}};
  return f;
}

class SafetensorsFileTest : public test_support::TempDirTest {
 protected:
  std::vector<std::string> entries(const fs::path& d) const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(d)) names.push_back(e.path().filename().string());
    return names;
  }
};

TEST(SafetensorsDTypeTest, NameSizeAndLookupAgree) {
  EXPECT_EQ(dtype_name(DType::BF16), "BF16");
  EXPECT_EQ(dtype_name(DType::F8_E4M3), "F8_E4M3");
  EXPECT_EQ(dtype_size(DType::F64), 8u);
  EXPECT_EQ(dtype_size(DType::F16), 2u);
  EXPECT_EQ(dtype_size(DType::BOOL), 1u);
  for (DType d : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32, DType::I16, DType::I8, DType::U8,
                  DType::BOOL, DType::F8_E4M3, DType::F8_E5M2}) {
    EXPECT_EQ(dtype_from_name(dtype_name(d)), d);
  }
  EXPECT_EQ(dtype_from_name("f32"), std::nullopt);
  EXPECT_EQ(dtype_from_name("U16"), std::nullopt);
}

TEST(SafetensorsTensorTest, NumelOfScalarIsOneAndOfZeroDimIsZero) {
  EXPECT_EQ((Tensor{DType::F32, {}, {}}.numel()), 1);
  EXPECT_EQ((Tensor{DType::F32, {4, 0, 3}, {}}.numel()), 0);
  EXPECT_EQ((Tensor{DType::F32, {2, 3, 5}, {}}.numel()), 30);
}

TEST(SafetensorsMakeTensorTest, ChecksByteSize) {
  const Bytes six(6);
  EXPECT_THROW(make_tensor(DType::F32, {2}, six), FormatError);
  EXPECT_THROW(make_tensor(DType::U8, {-1}, {}), FormatError);
  EXPECT_EQ(make_tensor(DType::F16, {3}, six).bytes.size(), 6u);
}

TEST(SafetensorsMakeTensorTest, FromTypedValuesChecksElementSize) {
  const std::vector<float> v = {1.0f, -2.5f};
  Tensor t = make_tensor_from<float>(DType::F32, {2}, v);
  ASSERT_EQ(t.bytes.size(), 8u);
  float back[2];
  std::memcpy(back, t.bytes.data(), 8);
  EXPECT_EQ(back[1], -2.5f);
  EXPECT_THROW(make_tensor_from<float>(DType::BF16, {2}, v), FormatError);
  EXPECT_THROW(make_tensor_from<float>(DType::F32, {3}, v), FormatError);
}

TEST(SafetensorsRoundTripTest, SerializeThenParsePreservesEverything) {
  const File f = random_file();
  expect_same(f, parse(serialize(f), "mem"));
}

TEST(SafetensorsRoundTripTest, EmptyFileRoundTrips) {
  const Bytes b = serialize(File{});
  const File back = parse(b, "mem");
  EXPECT_TRUE(back.tensors.empty());
  EXPECT_TRUE(back.metadata.empty());
}

TEST(SafetensorsSerializeTest, HeaderIsPaddedWithSpacesToMultipleOf8) {
  for (std::string name : {"a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh"}) {
    File f;
    f.tensors[name] = make_tensor(DType::U8, {1}, Bytes{7});
    const Bytes b = serialize(f);
    const std::uint64_t n = header_length(b);
    EXPECT_EQ(n % 8, 0u) << name;
    ASSERT_EQ(b.size(), 8 + n + 1) << name;
    const std::string header(b.begin() + 8, b.begin() + 8 + static_cast<std::ptrdiff_t>(n));
    EXPECT_EQ(header.front(), '{');
    EXPECT_EQ(header.find_last_not_of(' '), header.rfind('}')) << header;
  }
}

TEST(SafetensorsSerializeTest, TensorsAreContiguousInNameOrder) {
  File f;
  f.tensors["b"] = make_tensor(DType::U8, {2}, Bytes{2, 2});
  f.tensors["a"] = make_tensor(DType::U8, {1}, Bytes{1});
  f.tensors["c"] = make_tensor(DType::U8, {3}, Bytes{3, 3, 3});
  const Bytes b = serialize(f);
  const Bytes data(b.begin() + 8 + static_cast<std::ptrdiff_t>(header_length(b)), b.end());
  EXPECT_EQ(data, (Bytes{1, 2, 2, 3, 3, 3}));
}

TEST(SafetensorsSerializeTest, RejectsTensorWhoseBytesDoNotMatchShape) {
  File f;
  f.tensors["x"] = Tensor{DType::F32, {2}, Bytes(4)};
  EXPECT_THROW(serialize(f), FormatError);
}

TEST(SafetensorsParseTest, HandBuiltBufferFromSpecParses) {
  // Out of name order in both header and data, with padding, metadata, a
  // zero-size tensor and a scalar.
  const std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},)"
                             R"("__metadata__":{"format":"pt"},)"
                             R"("s":{"dtype":"BF16","shape":[],"data_offsets":[0,2]},)"
                             R"("z":{"dtype":"F16","shape":[0,5],"data_offsets":[12,12]},)"
                             R"("b":{"dtype":"BOOL","shape":[1,2],"data_offsets":[2,4]}})"
                             "     ";
  const Bytes data = {0x80, 0x3f,               // s: bf16 1.0
                      0x01, 0x00,               // b
                      0x00, 0x00, 0x80, 0x3f,   // w[0]: 1.0f
                      0x00, 0x00, 0x00, 0xc0};  // w[1]: -2.0f
  const File f = parse(build(header, data), "hand");
  EXPECT_EQ(f.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  ASSERT_EQ(f.tensors.size(), 4u);

  const Tensor& w = f.tensors.at("w");
  EXPECT_EQ(w.dtype, DType::F32);
  EXPECT_EQ(w.shape, (std::vector<std::int64_t>{2}));
  float wv[2];
  std::memcpy(wv, w.bytes.data(), 8);
  EXPECT_EQ(wv[0], 1.0f);
  EXPECT_EQ(wv[1], -2.0f);

  EXPECT_EQ(f.tensors.at("s").shape.size(), 0u);
  EXPECT_EQ(f.tensors.at("s").bytes, (Bytes{0x80, 0x3f}));
  EXPECT_EQ(f.tensors.at("b").bytes, (Bytes{1, 0}));
  EXPECT_EQ(f.tensors.at("z").numel(), 0);
  EXPECT_TRUE(f.tensors.at("z").bytes.empty());
}

// --- Validation: each malformed input gives a FormatError with a clear phrase.

TEST(SafetensorsParseErrorTest, ShorterThan8Bytes) { expect_parse_error(Bytes{1, 0, 0}, "shorter than 8 bytes"); }

TEST(SafetensorsParseErrorTest, HeaderLongerThanFile) {
  Bytes b = build("{}");
  b[0] = 100;  // claims 100 header bytes, only 2 follow
  expect_parse_error(b, "truncated: header says 100 bytes but only 2 follow");
}

TEST(SafetensorsParseErrorTest, HeaderLengthAbsurd) {
  Bytes b = build("{}");
  b[7] = 0x01;  // ~7e16 bytes
  expect_parse_error(b, "absurd");
}

TEST(SafetensorsParseErrorTest, HeaderNotJson) { expect_parse_error(build("{not json"), "not valid JSON"); }

TEST(SafetensorsParseErrorTest, HeaderNotObject) { expect_parse_error(build("[1, 2]"), "not a JSON object"); }

TEST(SafetensorsParseErrorTest, EntryNotObject) {
  expect_parse_error(build(R"({"x": 3})"), "tensor \"x\": entry is not a JSON object");
}

TEST(SafetensorsParseErrorTest, MissingDtype) {
  expect_parse_error(build(R"({"x":{"shape":[1],"data_offsets":[0,1]}})", {0}), "missing \"dtype\"");
}

TEST(SafetensorsParseErrorTest, MissingShape) {
  expect_parse_error(build(R"({"x":{"dtype":"U8","data_offsets":[0,1]}})", {0}), "missing \"shape\"");
}

TEST(SafetensorsParseErrorTest, MissingDataOffsets) {
  expect_parse_error(build(R"({"x":{"dtype":"U8","shape":[1]}})", {0}), "missing \"data_offsets\"");
}

TEST(SafetensorsParseErrorTest, DtypeNotString) {
  expect_parse_error(build(R"({"x":{"dtype":4,"shape":[1],"data_offsets":[0,1]}})", {0}), "\"dtype\" must be a string");
}

TEST(SafetensorsParseErrorTest, ShapeNotArrayOfIntegers) {
  expect_parse_error(build(R"({"x":{"dtype":"U8","shape":"1","data_offsets":[0,1]}})", {0}),
                     "\"shape\" must be an array of integers");
  expect_parse_error(build(R"({"x":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}})", {0}),
                     "\"shape\" must be an array of integers");
}

TEST(SafetensorsParseErrorTest, DataOffsetsWrongType) {
  expect_parse_error(build(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":["0","1"]}})", {0}),
                     "\"data_offsets\" must be [begin, end]");
  expect_parse_error(build(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0]}})", {0}),
                     "\"data_offsets\" must be [begin, end]");
  expect_parse_error(build(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}})", {0}),
                     "\"data_offsets\" must be [begin, end]");
}

TEST(SafetensorsParseErrorTest, UnknownDtype) {
  expect_parse_error(build(R"({"x":{"dtype":"F12","shape":[1],"data_offsets":[0,1]}})", {0}), "unknown dtype \"F12\"");
}

TEST(SafetensorsParseErrorTest, NegativeDimension) {
  expect_parse_error(build(R"({"x":{"dtype":"U8","shape":[2,-1],"data_offsets":[0,0]}})"), "negative dimension");
}

TEST(SafetensorsParseErrorTest, OffsetsBeginAfterEnd) {
  expect_parse_error(build(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[2,1]}})", {0, 0}), "begin 2 > end 1");
}

TEST(SafetensorsParseErrorTest, DataTruncated) {
  expect_parse_error(build(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", Bytes(10)),
                     "truncated: data_offsets end 16 is beyond the data section (10 bytes)");
}

TEST(SafetensorsParseErrorTest, ByteLengthDoesNotMatchShape) {
  expect_parse_error(build(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", Bytes(8)),
                     "byte length 8 does not match");
}

TEST(SafetensorsParseErrorTest, ShapeOverflows) {
  expect_parse_error(build(R"({"x":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", Bytes(8)),
                     "too large");
}

TEST(SafetensorsParseErrorTest, OverlappingTensors) {
  expect_parse_error(build(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}})",
                           Bytes(5)),
                     "overlap");
}

TEST(SafetensorsParseTest, ZeroSizeTensorInsideAnotherIsNotOverlap) {
  const File f = parse(build(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                             R"("e":{"dtype":"U8","shape":[0],"data_offsets":[2,2]}})",
                             Bytes(4)),
                       "mem");
  EXPECT_EQ(f.tensors.size(), 2u);
}

TEST(SafetensorsParseErrorTest, MetadataNotObject) {
  expect_parse_error(build(R"({"__metadata__":["a"]})"), "\"__metadata__\" must be an object");
}

TEST(SafetensorsParseErrorTest, MetadataValueNotString) {
  expect_parse_error(build(R"({"__metadata__":{"k":1}})"), "\"__metadata__\" value for \"k\" must be a string");
}

// --- Files.

TEST_F(SafetensorsFileTest, WriteThenReadRoundTrips) {
  const File f = random_file();
  const fs::path p = dir_ / "model.safetensors";
  write_file_atomic(p, f);
  expect_same(f, read_file(p));
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"model.safetensors"});
}

TEST_F(SafetensorsFileTest, ReadMissingFileSaysSoWithOsReason) {
  const fs::path p = dir_ / "nope.safetensors";
  try {
    read_file(p);
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("cannot open file: No such file or directory"), std::string::npos) << msg;
  }
}

TEST_F(SafetensorsFileTest, ReadDirectoryIsRejected) { EXPECT_THROW(read_file(dir_), FormatError); }

TEST_F(SafetensorsFileTest, ReadEmptyAndTruncatedFilesNameTheFile) {
  const fs::path p = dir_ / "bad.safetensors";
  std::ofstream(p, std::ios::binary).close();
  try {
    read_file(p);
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), p.string() + ": file is shorter than 8 bytes (0 bytes), no header length");
  }
  Bytes full = serialize(random_file());
  full.resize(full.size() - 1);
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(full.data()), static_cast<std::streamsize>(full.size()));
  EXPECT_THROW(read_file(p), FormatError);
}

TEST_F(SafetensorsFileTest, WriteIntoMissingDirectoryLeavesNothing) {
  const fs::path sub = dir_ / "missing";
  EXPECT_THROW(write_file_atomic(sub / "m.safetensors", random_file()), OutputError);
  EXPECT_FALSE(fs::exists(sub));
  EXPECT_TRUE(entries(dir_).empty());
}

TEST_F(SafetensorsFileTest, WriteUnderRegularFileLeavesNothing) {
  std::ofstream(dir_ / "file").put('x');
  EXPECT_THROW(write_file_atomic(dir_ / "file" / "m.safetensors", random_file()), OutputError);
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"file"});
}

TEST_F(SafetensorsFileTest, WriteIntoUnwritableDirectoryLeavesNothing) {
  const fs::path ro = dir_ / "ro";
  fs::create_directory(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  if (::access(ro.c_str(), W_OK) == 0) GTEST_SKIP() << "running with privileges that ignore modes";
  EXPECT_THROW(write_file_atomic(ro / "m.safetensors", random_file()), OutputError);
  EXPECT_TRUE(entries(ro).empty());
}

TEST_F(SafetensorsFileTest, FailedRenameRemovesTempFile) {
  // The temp file is created and written, then rename onto a non-empty
  // directory fails: the temp must be cleaned up.
  const fs::path target = dir_ / "target";
  fs::create_directories(target / "child");
  try {
    write_file_atomic(target, random_file());
    FAIL() << "expected OutputError";
  } catch (const OutputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot rename"), std::string::npos) << e.what();
  }
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"target"});
  EXPECT_TRUE(fs::is_directory(target / "child"));
}

TEST_F(SafetensorsFileTest, ReplacesExistingFileByRename) {
  const fs::path p = dir_ / "m.safetensors";
  File a;
  a.tensors["x"] = make_tensor(DType::U8, {1}, Bytes{1});
  write_file_atomic(p, a);
  struct stat before {};
  ASSERT_EQ(::stat(p.c_str(), &before), 0);

  const File b = random_file();
  write_file_atomic(p, b);
  struct stat after {};
  ASSERT_EQ(::stat(p.c_str(), &after), 0);
  // A new inode shows the old file was swapped out whole, never rewritten
  // in place, so a concurrent reader sees old or new but not a mix.
  EXPECT_NE(before.st_ino, after.st_ino);
  expect_same(b, read_file(p));
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"m.safetensors"});
}

}  // namespace
}  // namespace nvfp4::io

namespace nvfp4::io {
namespace {

std::vector<std::pair<std::string, TensorInfo>> infos_of(const File& f) {
  std::vector<std::pair<std::string, TensorInfo>> v;
  for (const auto& [name, t] : f.tensors) v.push_back({name, TensorInfo{t.dtype, t.shape}});
  return v;
}

File three_tensors() {
  File f;
  f.tensors["b"] = make_tensor(DType::U8, {3, 5}, std::vector<std::uint8_t>(15, 7));
  f.tensors["a"] = make_tensor_from<float>(DType::F32, {2}, std::vector<float>{1.5f, -2.0f});
  f.tensors["c"] = make_tensor(DType::BF16, {0, 4}, {});
  f.metadata["k"] = "v";
  return f;
}

TEST_F(SafetensorsFileTest, LazyFileReadsEachTensorAsReadFileDoes) {
  const File f = three_tensors();
  write_file_atomic(dir_ / "x.safetensors", f);
  const LazyFile lazy(dir_ / "x.safetensors");
  EXPECT_EQ(lazy.header().metadata, f.metadata);
  ASSERT_EQ(lazy.header().tensors.size(), 3u);
  for (const auto& [name, t] : f.tensors) {
    const Tensor got = lazy.read(name);
    EXPECT_EQ(got.dtype, t.dtype) << name;
    EXPECT_EQ(got.shape, t.shape) << name;
    EXPECT_EQ(got.bytes, t.bytes) << name;
  }
  EXPECT_THROW(lazy.read("nope"), FormatError);
}

TEST_F(SafetensorsFileTest, LazyFileRejectsATruncatedFileWhenOpened) {
  write_file_atomic(dir_ / "x.safetensors", three_tensors());
  fs::resize_file(dir_ / "x.safetensors", fs::file_size(dir_ / "x.safetensors") - 3);
  try {
    LazyFile lazy(dir_ / "x.safetensors");
    ADD_FAILURE() << "opened a truncated file";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST_F(SafetensorsFileTest, FileWriterStreamsTensorsIntoAFileReadFileAccepts) {
  const File f = three_tensors();
  {
    FileWriter w(dir_ / "w.safetensors", infos_of(f), f.metadata);
    for (const auto& [name, t] : f.tensors) w.write(name, t);
    w.commit();
  }
  const File back = read_file(dir_ / "w.safetensors");
  EXPECT_EQ(back.metadata, f.metadata);
  for (const auto& [name, t] : f.tensors) EXPECT_EQ(back.tensors.at(name).bytes, t.bytes) << name;
}

TEST_F(SafetensorsFileTest, AnAbandonedOrIncompleteFileWriterLeavesNoFile) {
  const File f = three_tensors();
  {
    FileWriter w(dir_ / "w.safetensors", infos_of(f));
    w.write("a", f.tensors.at("a"));
    EXPECT_THROW(w.write("c", f.tensors.at("c")), FormatError) << "out of the declared order";
    EXPECT_THROW(w.commit(), FormatError) << "two tensors missing";
  }
  EXPECT_TRUE(fs::is_empty(dir_)) << "neither the file nor its temp file may remain";
}

}  // namespace
}  // namespace nvfp4::io
