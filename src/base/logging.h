// Logging: one spdlog logger writing to stderr (never stdout: stdio mode owns it). Messages pass
// through an optional redaction hook (installed by the server with the scrubber) before they are
// written. Thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace contextd::base {

enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError, kOff };

// Parses "trace|debug|info|warn|warning|error|off". InvalidArgument names the accepted values.
absl::Status ParseLogLevel(std::string_view text, LogLevel* out);

// Sets up the process logger on stderr at `level`. Safe to call more than once.
void InitLogging(LogLevel level);

// Installs a function applied to every log message before it is written (secret scrubbing).
void SetLogRedactor(std::function<std::string(std::string_view)> redactor);

// Writes one log line.
void Log(LogLevel level, std::string_view message);

inline void LogInfo(std::string_view m) { Log(LogLevel::kInfo, m); }
inline void LogWarn(std::string_view m) { Log(LogLevel::kWarn, m); }
inline void LogError(std::string_view m) { Log(LogLevel::kError, m); }
inline void LogDebug(std::string_view m) { Log(LogLevel::kDebug, m); }

}  // namespace contextd::base
