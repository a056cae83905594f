#include "gateway/upstream_config.h"

#include "absl/strings/str_cat.h"

namespace contextd::gateway {

absl::Status ValidateUpstream(const UpstreamConfig& config) {
  if (config.name.empty()) return absl::InvalidArgumentError("upstream name is empty");
  for (char c : config.name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("upstream name \"", config.name, "\" must match [a-z0-9_-]+"));
    }
  }
  if (config.stdio.has_value() == config.http.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("upstream ", config.name, ": set exactly one of stdio and http"));
  }
  if (config.stdio && config.stdio->command.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("upstream ", config.name, ": stdio.command is empty"));
  }
  if (config.http && config.http->url.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("upstream ", config.name, ": http.url is empty"));
  }
  if (config.http) {
    const std::string& url = config.http->url;
    bool https = url.rfind("https://", 0) == 0;
    if (!https && url.rfind("http://", 0) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("upstream ", config.name, ": http.url must start with http:// or https://"));
    }
    if (!https && !config.http->ca_file.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("upstream ", config.name, ": http.ca_file applies only to an https:// url"));
    }
  }
  if (config.call_timeout.count() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("upstream ", config.name, ": call_timeout must be positive"));
  }
  return absl::OkStatus();
}

}  // namespace contextd::gateway
