#include "base/logging.h"

#include <mutex>

#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace contextd::base {
namespace {

std::mutex g_mu;
std::shared_ptr<spdlog::logger> g_logger;
std::function<std::string(std::string_view)> g_redactor;

spdlog::level::level_enum ToSpd(LogLevel l) {
  switch (l) {
    case LogLevel::kTrace:
      return spdlog::level::trace;
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
    case LogLevel::kOff:
      return spdlog::level::off;
  }
  return spdlog::level::info;
}

std::shared_ptr<spdlog::logger> LoggerLocked() {
  if (!g_logger) {
    g_logger = spdlog::stderr_color_mt("contextd");
    g_logger->set_level(spdlog::level::info);
    g_logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  }
  return g_logger;
}

}  // namespace

absl::Status ParseLogLevel(std::string_view text, LogLevel* out) {
  if (text == "trace")
    *out = LogLevel::kTrace;
  else if (text == "debug")
    *out = LogLevel::kDebug;
  else if (text == "info")
    *out = LogLevel::kInfo;
  else if (text == "warn" || text == "warning")
    *out = LogLevel::kWarn;
  else if (text == "error")
    *out = LogLevel::kError;
  else if (text == "off")
    *out = LogLevel::kOff;
  else
    return absl::InvalidArgumentError(
        "log level must be one of trace, debug, info, warn, error, off; got '" + std::string(text) +
        "'");
  return absl::OkStatus();
}

void InitLogging(LogLevel level) {
  std::lock_guard<std::mutex> lock(g_mu);
  LoggerLocked()->set_level(ToSpd(level));
}

void SetLogRedactor(std::function<std::string(std::string_view)> redactor) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_redactor = std::move(redactor);
}

void Log(LogLevel level, std::string_view message) {
  std::shared_ptr<spdlog::logger> logger;
  std::function<std::string(std::string_view)> redactor;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    logger = LoggerLocked();
    redactor = g_redactor;
  }
  if (!logger->should_log(ToSpd(level))) return;
  if (redactor) {
    std::string clean = redactor(message);
    logger->log(ToSpd(level), "{}", clean);
  } else {
    logger->log(ToSpd(level), "{}", message);
  }
}

}  // namespace contextd::base
