// What the outbox tests share: a subscriber that counts its wakes, and deliveries named by their id.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "server/delivery.h"

namespace lawn::outbox_test {

inline constexpr uint64_t kAckTimeout = 1'000'000'000;

class FakeSubscriber final : public Subscriber {
 public:
  using Subscriber::Subscriber;
  void Wake() override { ++wakes; }
  int wakes = 0;
};

inline Delivery Make(uint64_t id, std::string payload = "") {
  Delivery d;
  d.delivery_id = id;
  d.key = std::string("ns\0id", 5) + std::to_string(id);
  d.payload = std::move(payload);
  return d;
}

}  // namespace lawn::outbox_test
