// The mapper's rooms (issue "forms in family rooms", item 2): each family's forms, mapspace, estimate and
// lowering in its own folder under mapper/ — contraction, vector, attention, moe — shared pieces in kit/, the
// generic search, forms, mappings and decomposition table in mapper/ itself. No family includes another
// family's files, the kit includes no family, and the generic layer includes no family (it reaches them
// through mapper/form.hpp and the decomposition table's declarations, mapper/decompositions.hpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace tessera {
namespace {

namespace fs = std::filesystem;

const std::set<std::string> kFamilies = {"contraction", "vector", "attention", "moe"};
const std::set<std::string> kRooms = {"contraction", "vector", "attention", "moe", "kit"};

// The folders under mapper/ each #include "mapper/<folder>/..." of `file` names.
std::vector<std::string> included_rooms(const fs::path& file) {
  std::ifstream in(file);
  const std::regex include(R"re(^\s*#\s*include\s+"mapper/([^/"]+)/)re");
  std::vector<std::string> rooms;
  std::smatch match;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, match, include)) rooms.push_back(match[1]);
  return rooms;
}

TEST(MapperRooms, NoFamilyIncludesAnotherFamilysFilesAndTheKitAndGenericLayerIncludeNone) {
  const fs::path mapper = fs::path(TESSERA_SOURCE_DIR) / "mapper";
  int files = 0;
  std::set<std::string> rooms_seen;
  for (const auto& entry : fs::recursive_directory_iterator(mapper)) {
    if (!entry.is_regular_file()) continue;
    const std::string extension = entry.path().extension().string();
    if (extension != ".cpp" && extension != ".hpp") continue;
    ++files;
    const fs::path relative = fs::relative(entry.path(), mapper);
    // "" for the generic layer (mapper/*.cpp), else the room the file is in.
    const std::string room = relative.has_parent_path() ? relative.begin()->string() : "";
    if (!room.empty()) {
      EXPECT_TRUE(kRooms.count(room)) << relative << ": a folder that is no family and not the kit";
      EXPECT_EQ(std::distance(relative.begin(), relative.end()), 2) << relative << ": rooms hold no folders";
      rooms_seen.insert(room);
    }
    for (const std::string& included : included_rooms(entry.path())) {
      if (included == room || included == "kit") continue;
      ADD_FAILURE() << "mapper/" << relative.string() << " includes mapper/" << included << "/: "
                    << (room.empty()    ? "the generic layer reaches families through mapper/form.hpp"
                        : room == "kit" ? "the kit is below every family"
                                        : "a family includes no other family's files; shared code goes "
                                          "down into mapper/kit/");
    }
  }
  EXPECT_GT(files, 40);
  EXPECT_EQ(rooms_seen, kRooms);
}

}  // namespace
}  // namespace tessera
