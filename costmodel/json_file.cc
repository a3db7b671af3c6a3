#include "costmodel/json_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace autopar::costmodel {

absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path, absl::string_view source) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", source));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(source, " is not valid JSON"));
  }
  return json;
}

}  // namespace autopar::costmodel
