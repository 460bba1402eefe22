// A failure's explanation and report page cope with any actual outputs: for a case of every
// operation, each reference output in turn given another dtype, another shape, left out, and an
// extra tensor added, explain() names the tensor that differs and the failure page is written
// (a worker's wrong dtype once stopped the report step with "explain: E_DTYPE").
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "compare/compare.h"
#include "compare/explain.h"
#include "fuzz/campaign.h"
#include "reports/failure_page.h"
#include "tests/support/temp_dir.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;

// The tensor with another dtype of the same element count: U8 data read as I8, floats as integers.
io::Tensor with_other_dtype(const io::Tensor& t) {
  const io::DType other = t.dtype == io::DType::U8 ? io::DType::I8 : t.dtype == io::DType::I32 ? io::DType::F32 : io::DType::I32;
  std::vector<std::uint8_t> bytes(std::size_t(t.numel()) * io::dtype_size(other));
  std::copy_n(t.bytes.begin(), std::min(bytes.size(), t.bytes.size()), bytes.begin());
  return io::make_tensor(other, t.shape, bytes);
}

// The same bytes as one flat dimension, or with a second dimension of 1 when already flat.
io::Tensor with_other_shape(const io::Tensor& t) {
  std::vector<std::int64_t> shape = {t.numel()};
  if (t.shape == shape) shape.push_back(1);
  return io::make_tensor(t.dtype, shape, t.bytes);
}

struct Altered {
  std::string what;  // for the trace
  std::string tensor;
  cases::TensorMap actual;
};

std::vector<Altered> alterations(const cases::TensorMap& expected) {
  std::vector<Altered> out;
  for (const auto& [name, t] : expected) {
    cases::TensorMap a = expected;
    a[name] = with_other_dtype(t);
    out.push_back({"dtype of " + name, name, a});
    a = expected;
    a[name] = with_other_shape(t);
    out.push_back({"shape of " + name, name, a});
    a = expected;
    a.erase(name);
    out.push_back({"without " + name, name, a});
  }
  cases::TensorMap a = expected;
  a["bonus"] = io::make_tensor(io::DType::U8, {1}, std::vector<std::uint8_t>{7});
  out.push_back({"extra tensor", "bonus", a});
  return out;
}

TEST(ExplainSchema, AnyActualOutputsOfEveryOperationAreExplainedAndReported) {
  const std::uint64_t seed = (std::uint64_t(std::random_device{}()) << 32) | std::random_device{}();
  const test_support::TempDir tmp;
  const fs::path dir = tmp.path() / "report";
  for (const cases::OperationSpec& op : cases::operations()) {
    fuzz::CaseSpace space;
    space.ops = {std::string(op.name)};
    space.max_dim = 48;
    for (const cases::CaseRecord& r : fuzz::sample_cases(space, 3, seed)) {
      cases::TensorMap expected;
      try {
        expected = cases::ReferenceBackend().run(r.c);
      } catch (const Error&) {
        continue;  // a case the reference rejects has no outputs to alter
      }
      for (const Altered& alt : alterations(expected)) {
        SCOPED_TRACE(fmt::format("{}, {} (seed {})", cases::case_label(r.c), alt.what, seed));
        cases::Outcome e, a;
        e.outputs = expected;
        a.outputs = alt.actual;
        const compare::Comparison cmp = compare::compare_outcomes("reference", e, "worker", a);
        ASSERT_EQ(cmp.verdict, compare::Verdict::kSchema) << cmp.problem;
        compare::Explanation x;
        ASSERT_NO_THROW(x = compare::explain(r.c, cmp.expected, cmp.actual));
        EXPECT_NE(x.verdict.find(alt.tensor + ":"), std::string::npos) << x.verdict;
        EXPECT_GT(x.total_mismatches, 0u);
        ASSERT_NO_THROW(reports::write_failure_page(dir, "page", r, cmp, x, "reference vs worker", ""));
        EXPECT_TRUE(fs::is_regular_file(dir / "page.html"));
        fs::remove_all(dir);
      }
    }
  }
}

}  // namespace
}  // namespace nvfp4
