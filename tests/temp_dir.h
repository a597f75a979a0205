// A fresh temporary folder per test, removed (with its contents) afterwards.
#ifndef ROTOR_TESTS_TEMP_DIR_H_
#define ROTOR_TESTS_TEMP_DIR_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace rotor {
namespace test {

class TempDir {
 public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "rotor_test_XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    EXPECT_NE(::mkdtemp(name.data()), nullptr);
    path_ = name.data();
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path/relative
  std::string Path(const std::string& relative) const {
    return path_ + "/" + relative;
  }
  // Writes `contents` to path/relative (creating folders); returns the path.
  std::string Write(const std::string& relative,
                    const std::string& contents) const {
    const std::string file = Path(relative);
    std::filesystem::create_directories(
        std::filesystem::path(file).parent_path());
    std::ofstream out(file, std::ios::binary);
    out << contents;
    return file;
  }
  // The names in the folder (not recursive), sorted.
  std::vector<std::string> List(const std::string& relative = "") const {
    std::vector<std::string> names;
    for (const auto& entry :
         std::filesystem::directory_iterator(Path(relative))) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::string path_;
};

}  // namespace test
}  // namespace rotor

#endif  // ROTOR_TESTS_TEMP_DIR_H_
