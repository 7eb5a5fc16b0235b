// The fixed code of the exported library as the build embeds it
// (src/export/runtime/; Note [Embedded from a marker] in
// cmake/embed_files.cmake): the files the generator reads, each from the
// line after its marker, so that a file's own comment and the stand-in
// tables it includes to compile on its own never reach a generated unit.
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "core/embedded_file.h"
#include "export/export_codegen.h"
#include "tilejit/core/error.h"

namespace tilejit::exporter {
namespace {

TEST(EmbeddedRuntime, HoldsTheFixedPartsFromTheirMarkers) {
  std::vector<std::string> names;
  for (const EmbeddedFile& f : wrapper_files()) {
    names.emplace_back(f.name);
    EXPECT_EQ(f.text.find("embedded from the next line on"), std::string_view::npos) << f.name;
    EXPECT_EQ(f.text.find("wrapper_tables.h"), std::string_view::npos) << f.name;
    EXPECT_EQ(f.text.find("#include \"wrapper_check.cpp\""), std::string_view::npos) << f.name;
    ASSERT_FALSE(f.text.empty()) << f.name;
    EXPECT_EQ(f.text.back(), '\n') << f.name;
    EXPECT_EQ(f.text.data()[f.text.size()], '\0') << f.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"header_common.h", "header_dlpack.h", "wrapper_call.cpp",
                                             "wrapper_check.cpp", "wrapper_types.h"}));
  // Each begins with its code, not with the file's comment.
  EXPECT_EQ(embedded_text(wrapper_files(), "wrapper_types.h").substr(0, 20), "#include <pthread.h>");
  EXPECT_EQ(embedded_text(wrapper_files(), "wrapper_check.cpp").substr(0, 28),
            "namespace {\n\nstruct Bound {\n");
  EXPECT_EQ(embedded_text(wrapper_files(), "header_dlpack.h").substr(0, 9), "/* DLPack");
}

TEST(EmbeddedRuntime, AMissingFileIsAnInternalError) {
  try {
    embedded_text(wrapper_files(), "wrapper_tables.h");  // the stand-in is not embedded
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternalError);
    EXPECT_NE(std::string(e.what()).find("no embedded file 'wrapper_tables.h'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tilejit::exporter
