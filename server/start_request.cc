#include "server/start_request.h"

#include <cstring>
#include <string>

#include "absl/status/statusor.h"
#include "server/validation.h"

namespace lawn {

absl::Status ParseStart(const StartItem& r, const Options& options, int item, google::protobuf::Arena* arena,
                        StartOp* op) {
  // The item's name is built only for a refusal: a batch's valid items cost no string work.
  auto refuse = [item](absl::string_view message) {
    return absl::InvalidArgumentError((item < 0 ? std::string() : "timers[" + std::to_string(item) + "].") +
                                      std::string(message));
  };
  absl::StatusOr<std::string_view> ns = ValidateNamespace(r.ns);
  if (!ns.ok()) return refuse(ns.status().message());
  if (absl::Status s = ValidateId(r.id); !s.ok()) return refuse(s.message());
  if (r.payload.size() > options.max_payload_bytes) {
    return refuse("payload: " + std::to_string(r.payload.size()) +
                  " bytes; allowed up to max_payload_bytes (" + std::to_string(options.max_payload_bytes) +
                  ")");
  }
  const uint64_t tick = static_cast<uint64_t>(options.tick.count());
  switch (r.when) {
    case StartItem::When::kTtl: {
      absl::StatusOr<uint64_t> ttl = ValidateDuration("ttl", r.when_time.seconds, r.when_time.nanos, 1);
      if (!ttl.ok()) return refuse(ttl.status().message());
      op->by_ttl = true;
      op->ttl_ns = *ttl;
      break;
    }
    case StartItem::When::kDeadline: {
      absl::StatusOr<int64_t> deadline = ValidateDeadline("deadline", r.when_time.seconds, r.when_time.nanos);
      if (!deadline.ok()) return refuse(deadline.status().message());
      op->by_ttl = false;
      op->deadline_unix_ns = *deadline;
      break;
    }
    default:
      return refuse("when: exactly one of ttl or deadline is required");
  }
  if (r.has_interval) {
    absl::StatusOr<uint64_t> interval =
        ValidateDuration("interval", r.interval.seconds, r.interval.nanos, tick);
    if (!interval.ok()) return refuse(interval.status().message());
    op->interval_ns = *interval;
  }
  // namespace \0 id, on the call's arena: a 16-byte id after any namespace is past std::string's inline
  // 15 bytes, so a std::string key was a heap block (malloc and free) per timer.
  const size_t key_size = ns->size() + 1 + r.id.size();
  char* key = google::protobuf::Arena::CreateArray<char>(arena, key_size);
  std::memcpy(key, ns->data(), ns->size());
  key[ns->size()] = '\0';
  std::memcpy(key + ns->size() + 1, r.id.data(), r.id.size());
  op->key = std::string_view(key, key_size);
  op->payload = r.payload;
  op->replace = r.replace;
  return absl::OkStatus();
}

}  // namespace lawn
