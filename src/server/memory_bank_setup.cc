// The ReasoningBank's wiring (internal/engine.h: BuildMemoryBank): its store, the sanitizer and
// counter it uses, its events to the outbox or NATS and the metrics, and the OpenAI-compatible
// endpoints (distiller, embeddings) configured for it.
#include <chrono>
#include <memory>
#include <string>

#include "base/logging.h"
#include "base/status_macros.h"
#include "base/str_cat.h"
#include "endpoints/openai_distiller.h"
#include "endpoints/openai_embedder.h"
#include "events/event_message.h"
#include "memory/hnsw_index.h"
#include "scrub/private_spans.h"
#include "server/internal/engine.h"

namespace contextd::server::internal {

int64_t WallMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

folding::OutboxEvent ToOutboxEvent(events::EventMessage m, int64_t at_ms) {
  folding::OutboxEvent o;
  o.id = std::move(m.id);
  o.type = std::move(m.type);
  o.subject = std::move(m.subject);
  o.payload = std::move(m.payload);
  o.created_ms = at_ms;
  o.lease_until_ms = at_ms + kOutboxLeaseMs;
  return o;
}

// The ReasoningBank over its own connection to the engine's database. Texts are scrubbed before
// they are stored; retrieval uses the engine's token counter and the folding config's injection
// settings.
absl::Status BuildMemoryBank(const ServerConfig& config, Engine& engine) {
  ASSIGN_OR_RETURN(engine.memory_store, engine.backend->OpenMemoryStore());
  memory::MemoryBank::Parts parts;
  parts.store = engine.memory_store.get();
  parts.clock = &base::RealClock::Get();
  // What MemoryBank::Parts::sanitize promises: secrets scrubbed and private spans withheld (before
  // the scrub, so that a secret inside one is never archived).
  parts.sanitize = [scrubber = engine.scrubber](std::string_view text) {
    return scrubber->Scrub(scrub::WithholdPrivate(text));
  };
  parts.count_tokens = [counter = engine.counter.get()](std::string_view text) {
    return static_cast<int64_t>(counter->Count(text));
  };
  parts.events = [metrics = &engine.metrics, publisher = engine.events_publisher.get(),
                  outbox = engine.outbox.get(), relay = engine.outbox_relay.get(),
                  prefix = config.nats_events.subject_prefix](const memory::MemoryEvent& e) {
    if (outbox != nullptr) {
      // Appended after the bank's own write (its own connection): a crash in between loses the
      // event, never announces a change that was lost (decision 0027).
      int64_t now_ms = WallMillis();
      absl::Status st = outbox->Append({ToOutboxEvent(
          events::MemoryEventMessage(e, prefix, events::NewEventId(), now_ms), now_ms)});
      if (st.ok()) {
        relay->Wake();
      } else {
        metrics->EventDropped("outbox_error");
        base::LogWarn(base::StrCat("events outbox: ", e.type, ": ", st.message()));
      }
    } else if (publisher != nullptr) {
      int64_t now_ms = WallMillis();
      publisher->Enqueue(events::MemoryEventMessage(e, prefix, events::NewEventId(), now_ms));
    }
    constexpr std::string_view kFallback = "memory.fallback.";
    if (e.type.rfind(kFallback, 0) == 0) {
      metrics->MemoryFallback(std::string_view(e.type).substr(kFallback.size()));
      return;
    }
    metrics->MemoryEvent(e.type, static_cast<double>(e.memory_ids.size()),
                         static_cast<double>(e.tokens));
    if (e.type == "memory.extracted" && !e.memory_ids.empty()) {
      base::LogInfo(base::StrCat("memory: branch ", e.branch_id, " distilled into ",
                                 e.memory_ids.size(), " item(s)"));
    }
  };
  auto endpoint = [](const MemoryEndpointConfig& c) {
    endpoints::OpenAiEndpointOptions o;
    o.base_url = c.base_url;
    o.model = c.model;
    o.api_key_env = c.api_key_env;
    o.timeout_ms = c.timeout_ms;
    return o;
  };
  if (!config.memory.distiller.base_url.empty()) {
    endpoints::OpenAiEndpointOptions o = endpoint(config.memory.distiller);
    RETURN_IF_ERROR(endpoints::ValidateEndpointOptions(o));
    ASSIGN_OR_RETURN(auto client, endpoints::MakeEndpointClient(o));
    engine.memory_distiller = std::make_unique<endpoints::OpenAiDistiller>(o, *client);
    engine.memory_clients.push_back(std::move(client));
    parts.model_distiller = engine.memory_distiller.get();
    base::LogInfo(base::StrCat("memory: distiller ", o.model, " at ", o.base_url));
  }
  if (!config.memory.embeddings.base_url.empty()) {
    endpoints::OpenAiEndpointOptions o = endpoint(config.memory.embeddings);
    RETURN_IF_ERROR(endpoints::ValidateEndpointOptions(o));
    ASSIGN_OR_RETURN(auto client, endpoints::MakeEndpointClient(o));
    engine.memory_embedder = std::make_unique<endpoints::OpenAiEmbedder>(o, *client);
    engine.memory_clients.push_back(std::move(client));
    engine.memory_vectors = std::make_unique<memory::HnswIndex>();
    parts.embedder = engine.memory_embedder.get();
    parts.vectors = engine.memory_vectors.get();
    base::LogInfo(base::StrCat("memory: embeddings ", o.model, " at ", o.base_url));
  }
  memory::BankOptions options;
  options.min_confidence = config.folding.memory_min_confidence;
  options.max_items = config.folding.memory_max_items;
  options.auto_confirm = config.memory.auto_confirm;
  options.org_across_tenants = config.memory.org_across_tenants;
  engine.memory_bank = std::make_unique<memory::MemoryBank>(std::move(parts), options);
  return absl::OkStatus();
}

}  // namespace contextd::server::internal
