// events::StartNatsPublisher for a build without libnats: events.nats.url is then an error that
// says how to get NATS support.
#include "events/publisher.h"

namespace contextd::events {

bool NatsSupported() { return false; }

absl::StatusOr<std::unique_ptr<Publisher>> StartNatsPublisher(const PublisherOptions&,
                                                              PublisherHooks) {
  return absl::FailedPreconditionError(
      "config key 'events.nats.url': this contextd was built without NATS support; install "
      "libnats-dev (scripts/install-deps.sh does) and rebuild");
}

}  // namespace contextd::events
