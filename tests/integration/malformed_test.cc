// Requests whose bytes are not a valid protobuf message, sent through grpc::GenericStub to the real lawnd:
// every method answers INVALID_ARGUMENT naming itself (not gRPC's bare UNIMPLEMENTED, not a Subscribe stream
// ending OK as if half-closed), and lawnd goes on serving.
#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "lawn/v1/cluster.pb.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

// Field number 0x1fffffff... with a bad wire type: no message type parses it.
const std::string kGarbage = "\xff\xff\xff\xff";

grpc::ByteBuffer Bytes(const std::string& s) {
  grpc::Slice slice(s);
  return grpc::ByteBuffer(&slice, 1);
}

// The next event of `cq` (every call below has a deadline, so one always comes).
bool Await(grpc::CompletionQueue& cq) {
  void* tag;
  bool ok = false;
  EXPECT_TRUE(cq.Next(&tag, &ok));
  return ok;
}

void ShutdownAndDrain(grpc::CompletionQueue& cq) {
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
}

class MalformedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lawnd_ = std::make_unique<LawndProcess>(dir_.path() + "/data", std::vector<std::string>{});
    lawnd_->Start();
    channel_ = lawnd_->channel();
  }

  static void SetDeadline(grpc::ClientContext& ctx) {
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  }

  // Calls unary `method` ("/lawn.v1.TimerService/StartTimer") with `request` as its message bytes.
  grpc::Status Unary(const std::string& method, const std::string& request) {
    grpc::GenericStub stub(channel_);
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    grpc::CompletionQueue cq;
    grpc::ByteBuffer response;
    grpc::Status status;
    {
      auto call = stub.PrepareUnaryCall(&ctx, method, Bytes(request), &cq);
      call->StartCall();
      call->Finish(&response, &status, nullptr);
      Await(cq);
    }
    ShutdownAndDrain(cq);
    return status;
  }

  // Calls unary `method` with no request message at all (half-closes at once).
  grpc::Status UnaryWithoutMessage(const std::string& method) {
    grpc::GenericStub stub(channel_);
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    grpc::CompletionQueue cq;
    grpc::Status status;
    {
      auto call = stub.PrepareCall(&ctx, method, &cq);
      call->StartCall(nullptr);
      Await(cq);
      call->WritesDone(nullptr);
      Await(cq);
      call->Finish(&status, nullptr);
      Await(cq);
    }
    ShutdownAndDrain(cq);
    return status;
  }

  // A Subscribe stream that sends `messages` as raw bytes, then half-closes if `half_close`; returns how the
  // server ended it. Reads nothing: the namespaces used here have no expirations to send.
  grpc::Status Subscribe(const std::vector<std::string>& messages, bool half_close) {
    grpc::GenericStub stub(channel_);
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    grpc::CompletionQueue cq;
    grpc::Status status;
    {
      auto call = stub.PrepareCall(&ctx, "/lawn.v1.TimerService/Subscribe", &cq);
      call->StartCall(nullptr);
      Await(cq);
      for (const std::string& m : messages) {
        call->Write(Bytes(m), nullptr);
        Await(cq);  // Fails once the server has ended the stream; the status says why.
      }
      if (half_close) {
        call->WritesDone(nullptr);
        Await(cq);
      }
      call->Finish(&status, nullptr);
      Await(cq);
    }
    ShutdownAndDrain(cq);
    return status;
  }

  // lawnd still answers ordinary typed calls.
  void ExpectStillServing() {
    auto stub = lawnd_->stub();
    v1::Timer t;
    ASSERT_TRUE(StartTtl(*stub, "after", "t-" + std::to_string(++serial_), milliseconds(60000), &t).ok());
    EXPECT_EQ(t.namespace_(), "after");
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    v1::GetTimerRequest get;
    get.set_namespace_("after");
    get.set_id(t.id());
    v1::GetTimerResponse got;
    grpc::Status s = stub->GetTimer(&ctx, get, &got);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(got.timer().id(), t.id());
  }

  static std::string OpenMessage(const std::string& ns) {
    v1::SubscribeRequest open;
    open.mutable_open()->set_namespace_(ns);
    return open.SerializeAsString();
  }

  TempDir dir_;
  std::unique_ptr<LawndProcess> lawnd_;
  std::shared_ptr<grpc::Channel> channel_;
  int serial_ = 0;
};

// The methods of lawn.v1's services, from the descriptors, so a method added later is covered too.
std::vector<const google::protobuf::MethodDescriptor*> AllMethods() {
  std::vector<const google::protobuf::MethodDescriptor*> out;
  for (const google::protobuf::FileDescriptor* file :
       {v1::StartTimerRequest::descriptor()->file(), v1::GetClusterMapRequest::descriptor()->file()}) {
    for (int s = 0; s < file->service_count(); ++s) {
      for (int m = 0; m < file->service(s)->method_count(); ++m) out.push_back(file->service(s)->method(m));
    }
  }
  return out;
}

std::string PathOf(const google::protobuf::MethodDescriptor* m) {
  return "/" + m->service()->full_name() + "/" + m->name();
}

TEST_F(MalformedTest, EveryUnaryMethodAnswersInvalidArgumentNamingItself) {
  int unary = 0;
  for (const google::protobuf::MethodDescriptor* m : AllMethods()) {
    if (m->client_streaming() || m->server_streaming()) {
      // Streams need their own test below; a new one must get one too.
      EXPECT_EQ(PathOf(m), "/lawn.v1.TimerService/Subscribe")
          << "a streaming method without a malformed test";
      continue;
    }
    ++unary;
    grpc::Status s = Unary(PathOf(m), kGarbage);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << PathOf(m) << ": " << s.error_message();
    EXPECT_NE(s.error_message().find(m->name() + ": "), std::string::npos) << s.error_message();
    EXPECT_NE(s.error_message().find(m->input_type()->full_name()), std::string::npos) << s.error_message();
  }
  EXPECT_EQ(unary, 14);  // 7 of TimerService, 2 of AdminService, 5 of ClusterService.
  ExpectStillServing();
}

TEST_F(MalformedTest, UnaryCallWithoutARequestMessageIsInvalidArgument) {
  grpc::Status s = UnaryWithoutMessage("/lawn.v1.TimerService/GetTimer");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("GetTimer: "), std::string::npos) << s.error_message();
  ExpectStillServing();
}

TEST_F(MalformedTest, InvalidUtf8InAStringFieldIsInvalidArgumentAndStaysOutOfTheLog) {
  // namespace (field 1, a proto3 string) = "\xff": proto3 refuses to parse it, and libprotobuf would print an
  // ERROR line to stderr for it, outside lawnd's log format. DeleteTimer is parsed by protobuf; StartTimer
  // and StartTimers by lawnd's own reader (server/start_wire.h), which refuses the same bytes.
  const std::string bad_namespace("\x0a\x01\xff", 3);
  const std::string bad_item = std::string("\x0a\x03", 2) + bad_namespace;  // StartTimersRequest.timers[0].
  const std::vector<std::pair<std::string, std::string>> calls = {
      {"DeleteTimer", bad_namespace}, {"StartTimer", bad_namespace}, {"StartTimers", bad_item}};
  for (const auto& [method, bytes] : calls) {
    for (int i = 0; i < 3; ++i) {
      grpc::Status s = Unary("/lawn.v1.TimerService/" + method, bytes);
      EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method << ": " << s.error_message();
      EXPECT_NE(s.error_message().find(method + ": the request is not a valid lawn.v1." + method + "Request"),
                std::string::npos)
          << s.error_message();
    }
  }
  ExpectStillServing();
  // libprotobuf's complaint went through spdlog at debug (the test runs lawnd with --log-level debug), not
  // straight to stderr in its own "[libprotobuf ERROR ...]" format.
  const std::string log = lawnd_->Log();
  EXPECT_EQ(log.find("[libprotobuf"), std::string::npos) << log;
  EXPECT_TRUE(std::regex_search(log, std::regex(R"(\bdebug \[\d+\] libprotobuf \S+: String field)"))) << log;
}

TEST_F(MalformedTest, SubscribeWithGarbageAsFirstMessageIsInvalidArgument) {
  grpc::Status s = Subscribe({kGarbage}, /*half_close=*/false);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("Subscribe: message 1 is not a valid lawn.v1.SubscribeRequest"),
            std::string::npos)
      << s.error_message();
  ExpectStillServing();
}

TEST_F(MalformedTest, SubscribeWithGarbageAfterAValidOpenIsInvalidArgument) {
  grpc::Status s = Subscribe({OpenMessage("quiet"), kGarbage}, /*half_close=*/false);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("Subscribe: message 2 is not a valid lawn.v1.SubscribeRequest"),
            std::string::npos)
      << s.error_message();
  ExpectStillServing();
}

TEST_F(MalformedTest, SubscribeWithAValidOpenThenHalfCloseStillEndsOk) {
  grpc::Status s = Subscribe({OpenMessage("quiet")}, /*half_close=*/true);
  EXPECT_TRUE(s.ok()) << s.error_code() << ": " << s.error_message();
}

TEST_F(MalformedTest, ExpirationsStillReachATypedSubscriberAfterMalformedCalls) {
  for (const google::protobuf::MethodDescriptor* m : AllMethods()) {
    if (!m->client_streaming()) Unary(PathOf(m), kGarbage);
  }
  Subscribe({kGarbage}, /*half_close=*/false);
  auto stub = lawnd_->stub();
  TestSubscriber sub(*stub, "fires");
  ASSERT_TRUE(StartTtl(*stub, "fires", "soon", milliseconds(50), nullptr, "p").ok());
  std::optional<v1::Expiration> e = sub.Next(std::chrono::seconds(30));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->timer().id(), "soon");
  EXPECT_EQ(e->timer().payload(), "p");
  EXPECT_TRUE(sub.Ack(e->delivery_id()));
  EXPECT_TRUE(sub.Close().ok());
}

}  // namespace
}  // namespace lawn::testing
