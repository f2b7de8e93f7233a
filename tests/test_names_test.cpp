// CTest runs each doctest case by name (doctest_discover_tests, CMakeLists.txt): a ';' in a
// name is CMake's list separator, so the case was registered as two names that match nothing,
// and CTest reported both as passed without running a check (24 cases were, one of them failing).
// doctest's --test-case filter also reads '*' and '?' as wildcards and '\' as an escape. This test
// reads every TEST_CASE name in tests/*.cpp and refuses those characters.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

const std::string kTests = std::string(OVERLAPSIM_SOURCE_DIR) + "/tests";

}  // namespace

TEST_CASE("every test case name runs under CTest as written (no semicolon, wildcard or backslash), none twice") {
  const std::regex test_case(R"re(TEST_CASE\("((?:[^"\\]|\\.)*)"\))re");
  std::set<std::string> seen;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kTests)) {
    if (entry.path().extension() != ".cpp") continue;
    ++files;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (std::sregex_iterator it(s.begin(), s.end(), test_case), end; it != end; ++it) {
      const std::string name = (*it)[1];
      INFO(entry.path().filename().string() << ": TEST_CASE(\"" << name << "\")");
      CHECK(name.find_first_of(";*?\\") == std::string::npos);
      CHECK(seen.insert(name).second);
    }
  }
  CHECK(files >= 20);
  CHECK(seen.size() >= 250);
}
