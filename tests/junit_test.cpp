// The one markup escaping (reports/escape.h) and the one JUnit writer (reports/junit.h), whose
// output is read back by libxml2 (tests/support/xml_dom.h); and the JUnit file of `gate --junit`
// read back the same way (check-checkpoint's: tests/checkpoint_test.cpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "reports/escape.h"
#include "reports/junit.h"
#include "tests/support/cli_runner.h"
#include "tests/support/xml_dom.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using test_support::XmlElement;

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

XmlElement parsed(const std::string& xml) {
  std::string error;
  const std::optional<XmlElement> root = test_support::parse_xml(xml, error);
  if (!root) ADD_FAILURE() << "not well-formed XML (" << error << "):\n" << xml;
  return root.value_or(XmlElement{});
}

TEST(MarkupEscape, TheFiveSpecialCharactersBecomeEntities) {
  EXPECT_EQ(reports::escape_markup("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&#39;f");
  EXPECT_EQ(reports::escape_markup("&amp;"), "&amp;amp;");  // text that looks escaped is text
  EXPECT_EQ(reports::escape_markup(""), "");
}

TEST(MarkupEscape, ControlCharactersThatXmlForbidsBecomeReplacementCharacters) {
  for (int c = 0; c < 0x20; ++c) {
    const std::string in = "a" + std::string(1, char(c)) + "b";
    const bool kept = c == '\t' || c == '\n' || c == '\r';
    EXPECT_EQ(reports::escape_markup(in), kept ? in : "a" + kReplacement + "b") << "character " << c;
  }
  EXPECT_EQ(reports::escape_markup("\x7F"), "\x7F");
}

TEST(MarkupEscape, NonAsciiPassesThroughByteForByte) {
  const std::string text = "\xC2\xB5 \xE2\x86\x92 \xF0\x9D\x94\xB8 \xC3\xBC";  // µ → 𝔸 ü
  EXPECT_EQ(reports::escape_markup(text), text);
  EXPECT_EQ(reports::escape_markup("\xFF\x80"), "\xFF\x80");  // not UTF-8, and still not altered
}

TEST(JunitXml, ReadsBackWithEveryNameCountAndMessageAsWritten) {
  const std::string hostile = "a&b<c>d\"e'f \xC2\xB5";
  const std::vector<reports::JunitSuite> suites = {
      {"first " + hostile, "class " + hostile, {{"passes", 0.25}, {"fails " + hostile, 1.5, "why " + hostile}}},
      {"second", "second", {{"untimed", std::nullopt, "no"}, {"untimed too"}}},
  };
  const XmlElement root = parsed(reports::junit_xml("run " + hostile, suites));
  EXPECT_EQ(root.name, "testsuites");
  EXPECT_EQ(root.attr("name"), "run " + hostile);
  const auto s = root.all("testsuite");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0]->attr("name"), "first " + hostile);
  EXPECT_EQ(s[0]->attr("tests"), "2");
  EXPECT_EQ(s[0]->attr("failures"), "1");
  const auto c0 = s[0]->all("testcase");
  ASSERT_EQ(c0.size(), 2u);
  EXPECT_EQ(c0[0]->attr("classname"), "class " + hostile);
  EXPECT_EQ(c0[0]->attr("name"), "passes");
  EXPECT_EQ(c0[0]->attr("time"), "0.250");
  EXPECT_TRUE(c0[0]->children.empty());
  EXPECT_EQ(c0[1]->attr("name"), "fails " + hostile);
  EXPECT_EQ(c0[1]->attr("time"), "1.500");
  ASSERT_EQ(c0[1]->all("failure").size(), 1u);
  EXPECT_EQ(c0[1]->all("failure")[0]->attr("message"), "why " + hostile);
  EXPECT_EQ(s[1]->attr("tests"), "2");
  EXPECT_EQ(s[1]->attr("failures"), "1");
  const auto c1 = s[1]->all("testcase");
  ASSERT_EQ(c1.size(), 2u);
  EXPECT_EQ(c1[0]->attributes.count("time"), 0u);
  EXPECT_EQ(c1[0]->all("failure").size(), 1u);
  EXPECT_TRUE(c1[1]->children.empty());
}

TEST(JunitXml, AControlCharacterInAMessageStillMakesWellFormedXml) {
  const XmlElement root = parsed(reports::junit_xml("run", {{"s", "s", {{"case\x01", std::nullopt, "byte \x1B[31m red"}}}}));
  ASSERT_EQ(root.all("testsuite").size(), 1u);
  const auto c = root.all("testsuite")[0]->all("testcase");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]->attr("name"), "case" + kReplacement);
  ASSERT_EQ(c[0]->all("failure").size(), 1u);
  EXPECT_EQ(c[0]->all("failure")[0]->attr("message"), "byte " + kReplacement + "[31m red");
}

TEST(JunitFile, TheGatesNamesEveryCorpusFileAndEveryOperationItFuzzed) {
  const fs::path dir = fs::temp_directory_path() / ("nvfp4_junit_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "corpus");
  // A case file of the repository's corpus, and a file that is no case file under a name with
  // every character markup escapes and one that XML forbids.
  const fs::path good = dir / "corpus" / "good.safetensors", bad = dir / "corpus" / "bad &<\"'>\x01.safetensors";
  fs::copy_file(fs::path(NVFP4_SOURCE_DIR) / "corpora/seed/case-bd95ddf9a902c1fa.safetensors", good);
  std::ofstream(bad) << "not a case file";
  const test_support::CliRun g = test_support::run_cli(
      "gate --corpus " + (dir / "corpus").string() + " --time 1s --jobs 1 --backends reference,metamorphic --found " +
          (dir / "found").string() + " --report " + (dir / "report").string() + " --junit " + (dir / "j.xml").string() +
          " --vectors " + NVFP4_SOURCE_DIR + "/corpora/vectors/level-1.json",
      dir);
  EXPECT_EQ(g.exit_code, 1) << g.out << g.err;
  const XmlElement root = parsed(test_support::slurp_text(dir / "j.xml"));
  EXPECT_EQ(root.attr("name"), "nvfp4-verify gate");
  const auto suites = root.all("testsuite");
  ASSERT_EQ(suites.size(), 3u);
  EXPECT_EQ(suites[0]->attr("name"), "campaign");
  EXPECT_EQ(suites[1]->attr("name"), "corpus");
  EXPECT_EQ(suites[2]->attr("name"), "vectors");

  // The campaign: one testcase per operation of the summary table, timed.
  const auto ops = suites[0]->all("testcase");
  EXPECT_EQ(suites[0]->attr("tests"), std::to_string(ops.size()));
  EXPECT_EQ(suites[0]->attr("failures"), "0");
  ASSERT_GT(ops.size(), 5u);
  for (const XmlElement* c : ops) {
    std::smatch m;
    const std::string name = c->attr("name");
    ASSERT_TRUE(std::regex_match(name, m, std::regex(R"((\S+) \((\d+) cases\))"))) << name;
    EXPECT_TRUE(std::regex_search(g.out, std::regex("\n  " + m[1].str() + " +" + m[2].str() + " "))) << name << g.out;
    EXPECT_EQ(c->attr("classname"), "campaign");
    EXPECT_TRUE(std::regex_match(c->attr("time"), std::regex(R"(\d+\.\d{3})"))) << c->attr("time");
  }

  // The corpus: both files by path, in order, the unreadable one failing with its reason.
  EXPECT_EQ(suites[1]->attr("tests"), "2");
  EXPECT_EQ(suites[1]->attr("failures"), "1");
  const auto files = suites[1]->all("testcase");
  ASSERT_EQ(files.size(), 2u);
  std::string bad_name = bad.string();
  bad_name.replace(bad_name.find('\x01'), 1, kReplacement);
  EXPECT_EQ(files[0]->attr("name"), bad_name);
  EXPECT_EQ(files[0]->attr("classname"), "corpus");
  ASSERT_EQ(files[0]->all("failure").size(), 1u);
  EXPECT_EQ(files[0]->all("failure")[0]->attr("message").rfind("unreadable case file: ", 0), 0u)
      << files[0]->all("failure")[0]->attr("message");
  EXPECT_EQ(files[1]->attr("name"), good.string());
  EXPECT_TRUE(files[1]->children.empty());
  EXPECT_NE(g.out.find("corpus: 2 cases replayed, 1 failed"), std::string::npos) << g.out;

  // The level-1 vectors: each one a testcase, named PACK/FILE#ID, none failing.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(g.out, m, std::regex(R"(vectors: (\d+) cases replayed, 0 failed)"))) << g.out;
  EXPECT_EQ(suites[2]->attr("tests"), m[1].str());
  EXPECT_EQ(suites[2]->attr("failures"), "0");
  const auto vectors = suites[2]->all("testcase");
  ASSERT_FALSE(vectors.empty());
  EXPECT_EQ(vectors[0]->attr("name"), "vectors/level-1/quantize-te.safetensors#v0000");
  EXPECT_TRUE(std::regex_search(g.out, std::regex("\nvectors: the [0-9]+ regenerated files of level 1 have the hashes of ")))
      << g.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace nvfp4
