// Reading a small JSON input file (a host calibration, measured node times)
// with errors that name the file, as every loader of such a file reports them.
#ifndef AUTOPAR_COSTMODEL_JSON_FILE_H_
#define AUTOPAR_COSTMODEL_JSON_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace autopar::costmodel {

/// The parsed contents of `path`. `source` names the file in errors, e.g.
/// "node times file 'times.json'": NotFound "cannot open <source>" when it
/// cannot be read, InvalidArgument "<source> is not valid JSON".
absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path, absl::string_view source);

}  // namespace autopar::costmodel

#endif  // AUTOPAR_COSTMODEL_JSON_FILE_H_
