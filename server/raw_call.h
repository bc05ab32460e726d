// Raw (grpc::ByteBuffer) callback calls: lawn parses each request itself instead of letting gRPC do it.
//
// Why: on gRPC's typed callback API a request whose bytes are not a valid message never reaches the handler.
// A unary call is answered UNIMPLEMENTED with an empty message (CallbackUnaryHandler::Deserialize fails), and
// a streamed message that does not parse surfaces as OnReadDone(false), the same as a half-close, so the
// stream ends OK. Registered raw, every method sees the bytes and can answer INVALID_ARGUMENT naming itself.
//
// Thread-safety: ParseMessage, ParseRequest and SerializeMessage are pure functions. A UnaryCall is owned by
// gRPC from the moment the handler returns it until OnDone; Reply may be called from any thread, exactly
// once.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "google/protobuf/arena.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"

namespace lawn {

// Parses `raw` into `msg` (cleared first). False if there is no message or its bytes are not one.
bool ParseMessage(const grpc::ByteBuffer& raw, google::protobuf::Message* msg);

// The request of unary `method` ("StartTimer"): OK, or INVALID_ARGUMENT naming the method and the expected
// message type when the call carried no message or bytes that do not parse as one.
grpc::Status ParseRequest(const grpc::ByteBuffer* raw, std::string_view method,
                          google::protobuf::Message* msg);

// The request of unary `method` as one piece of bytes on `arena` (gRPC may hold it in several slices), for a
// method that reads its message itself (server/start_wire.h). INVALID_ARGUMENT as ParseRequest's when the
// call carried no message; `type` names the message expected.
grpc::Status RequestBytes(const grpc::ByteBuffer* raw, std::string_view method, std::string_view type,
                          google::protobuf::Arena* arena, std::string_view* out);
// ParseRequest's answer to bytes that do not parse as a `type` message.
grpc::Status NotAValidRequest(std::string_view method, std::string_view type);

// Arena options for a call's messages: `block` (of `size` bytes, owned by the call) first, then blocks that
// grow to 64 KiB, so a large batch or list takes few allocations.
inline constexpr size_t kCallArenaInlineBytes = 1024;
google::protobuf::ArenaOptions CallArenaOptions(char* block, size_t size);

// Serializes `msg` into `out`, replacing what it held. Fails (INTERNAL) only if protobuf cannot serialize it
// (over 2 GiB).
grpc::Status SerializeMessage(const google::protobuf::Message& msg, grpc::ByteBuffer* out);

// The reactor of one raw unary call; it owns the typed request and response (see RawUnary), so they live
// until OnDone, as gRPC's own arena-allocated ones did.
class UnaryCall : public grpc::ServerUnaryReactor {
 public:
  UnaryCall(const UnaryCall&) = delete;
  UnaryCall& operator=(const UnaryCall&) = delete;

  // Answers the call: on OK the typed response is serialized into gRPC's response buffer first (so it must be
  // complete: REQUIRES every writer of the response is done), and if that fails the call ends INTERNAL.
  // Replaces ServerUnaryReactor::Finish. Any thread, exactly once; may run before the handler has returned
  // the call (gRPC holds the finish until the reactor is bound).
  void Reply(const grpc::Status& status);

  // Answers the call with `status` and, if OK, `response` as it is (bytes another member answered; see
  // server/cluster_router.h). Instead of Reply; any thread, exactly once.
  void ReplyBytes(const grpc::Status& status, const grpc::ByteBuffer& response) {
    if (status.ok()) *out_ = response;
    Finish(status);
  }

  // grpc::ServerUnaryReactor
  void OnDone() override {
    // The answer is on its way to the client (or the call was cancelled): the drain may shut gRPC down.
    if (live_ != nullptr) live_->fetch_sub(1, std::memory_order_release);
    delete this;
  }

 protected:
  // `out`: gRPC's response buffer for this call, valid until OnDone. `live` (may be nullptr) counts calls
  // not yet done: incremented here, decremented in OnDone.
  UnaryCall(grpc::ByteBuffer* out, std::atomic<int64_t>* live) : out_(out), live_(live) {
    if (live_ != nullptr) live_->fetch_add(1, std::memory_order_relaxed);
  }
  ~UnaryCall() override = default;
  virtual const google::protobuf::Message& response_message() const = 0;

 private:
  grpc::ByteBuffer* const out_;
  std::atomic<int64_t>* const live_;
};

// A unary call with request type Req and response type Resp. The handler parses into `request` (see
// ParseRequest) and whoever answers fills `response` before Reply.
//
// Both messages live on the call's own protobuf arena: a batch of 100 timers parses into a few arena blocks
// instead of several heap allocations per item (the message, each string object, each result), and all of it
// is released at once with the call (BENCHMARKS.md section 22). (A string field's characters beyond 15 bytes
// are still a heap block of its own: protobuf 3.21 keeps a std::string on the arena. So StartTimer and
// StartTimers, where that was a block per timer, read their bytes with server/start_wire.h instead, and
// their `request` is an unused Empty.) The handler also keeps
// what it derives from the request there, such as each start's key (arena()). Workers fill the response from
// their own threads; protobuf's arena is thread-safe for that.
template <class Req, class Resp>
class RawUnary final : public UnaryCall {
 public:
  RawUnary(grpc::ByteBuffer* out, std::atomic<int64_t>* live)
      : UnaryCall(out, live),
        arena_(CallArenaOptions(initial_block_, sizeof(initial_block_))),
        request(*google::protobuf::Arena::CreateMessage<Req>(&arena_)),
        response(*google::protobuf::Arena::CreateMessage<Resp>(&arena_)) {}

  // Memory that lives as long as the call (until OnDone, after the answer is sent). Thread-safe.
  google::protobuf::Arena* arena() { return &arena_; }

 private:
  // Enough for a unary call's request and the messages the handler's thread adds. (Another thread that
  // allocates on the arena, such as a worker filling the response, gets a first block of its own.)
  alignas(8) char initial_block_[kCallArenaInlineBytes];
  google::protobuf::Arena arena_;  // Owns the messages below; declared after the block it starts with.

 public:
  Req& request;
  Resp& response;

 private:
  const google::protobuf::Message& response_message() const override { return response; }
};

}  // namespace lawn
