#include "events/publisher.h"

namespace contextd::events {

const char* ConnectionStateName(ConnectionState state) {
  switch (state) {
    case ConnectionState::kConnecting:
      return "connecting";
    case ConnectionState::kConnected:
      return "connected";
    case ConnectionState::kReconnecting:
      return "reconnecting";
    case ConnectionState::kClosed:
      return "closed";
  }
  return "unknown";
}

}  // namespace contextd::events
