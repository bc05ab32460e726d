// TimerServiceImpl in cluster mode (server/timer_service.h): where a call goes when this member does not
// serve it alone. By-key calls are forwarded to their partition's owner (RouteElsewhere), StartTimers sends
// each owner its items (ForwardStarts), and ListTimers and GetStats ask every member and merge (FanOut*).
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "server/proto_convert.h"
#include "server/start_wire.h"
#include "server/timer_commands.h"
#include "server/timer_service.h"

namespace lawn {

grpc::ServerUnaryReactor* TimerServiceImpl::FanOutAndMerge(grpc::CallbackServerContext* context, UnaryCall* call,
                                                           const char* method, Rpc rpc,
                                                           const grpc::ByteBuffer* raw_request, Merge merge) {
  ClusterRouter* router = router_.load(std::memory_order_acquire);
  if (router == nullptr) {
    return Reject(context, call, method, absl::UnavailableError("lawnd is joining its cluster; retry shortly"));
  }
  const RequestTimer timer = Track(rpc);  // Observed once the merge answers, or below if nothing was sent.
  absl::Status sent = router->FanOut(std::string("/lawn.v1.TimerService/") + method, *context, *raw_request,
                                     [call, timer, merge = std::move(merge)](ClusterRouter::Answers answers) {
                                       const grpc::Status status = merge(answers);
                                       timer.Observe();
                                       call->Reply(status);
                                     });
  if (!sent.ok()) {
    timer.Observe();
    return Reject(context, call, method, sent);
  }
  return call;
}

namespace {

// Each member's answer parsed into `out`, or the first member error (or INTERNAL for one that does not parse).
template <class Response>
grpc::Status ParseAnswers(const ClusterRouter::Answers& answers, const char* method, std::vector<Response>* out) {
  out->resize(answers.size());
  for (size_t i = 0; i < answers.size(); ++i) {
    if (!answers[i].first.ok()) return answers[i].first;
    if (!ParseMessage(answers[i].second, &(*out)[i])) {
      return grpc::Status(grpc::StatusCode::INTERNAL, std::string(method) + ": a member's answer does not parse");
    }
  }
  return grpc::Status::OK;
}

}  // namespace

grpc::ServerUnaryReactor* TimerServiceImpl::FanOutList(grpc::CallbackServerContext* context, UnaryCall* call,
                                                       const grpc::ByteBuffer* raw_request, size_t limit) {
  v1::ListTimersResponse* out = &static_cast<RawUnary<v1::ListTimersRequest, v1::ListTimersResponse>*>(call)->response;
  return FanOutAndMerge(context, call, "ListTimers", Rpc::kListTimers, raw_request,
                        [out, limit](const ClusterRouter::Answers& answers) {
                          std::vector<v1::ListTimersResponse> pages;
                          if (grpc::Status s = ParseAnswers(answers, "ListTimers", &pages); !s.ok()) return s;
                          // Each member listed its first `limit` ids after the token: the union's first
                          // `limit` are this page, and more follow if any member or the union had more.
                          bool more = false;
                          std::vector<v1::Timer*> all;
                          for (v1::ListTimersResponse& page : pages) {
                            more = more || !page.next_page_token().empty();
                            for (v1::Timer& t : *page.mutable_timers()) all.push_back(&t);
                          }
                          std::sort(all.begin(), all.end(),
                                    [](const v1::Timer* a, const v1::Timer* b) { return a->id() < b->id(); });
                          const size_t n = std::min(all.size(), limit);
                          more = more || all.size() > limit;
                          for (size_t i = 0; i < n; ++i) out->add_timers()->Swap(all[i]);
                          if (more && n > 0) {
                            out->set_next_page_token(EncodePageToken(out->timers(static_cast<int>(n - 1)).id()));
                          }
                          return grpc::Status::OK;
                        });
}

grpc::ServerUnaryReactor* TimerServiceImpl::FanOutStats(grpc::CallbackServerContext* context, UnaryCall* call,
                                                        const grpc::ByteBuffer* raw_request) {
  v1::GetStatsResponse* out = &static_cast<RawUnary<v1::GetStatsRequest, v1::GetStatsResponse>*>(call)->response;
  return FanOutAndMerge(context, call, "GetStats", Rpc::kGetStats, raw_request,
                        [out](const ClusterRouter::Answers& answers) {
                          std::vector<v1::GetStatsResponse> stats;
                          if (grpc::Status s = ParseAnswers(answers, "GetStats", &stats); !s.ok()) return s;
                          std::map<std::string, v1::NamespaceStats> namespaces;
                          for (v1::GetStatsResponse& one : stats) {
                            out->set_pending_timers(out->pending_timers() + one.pending_timers());
                            out->set_outbox(out->outbox() + one.outbox());
                            out->set_redeliveries(out->redeliveries() + one.redeliveries());
                            // Shards of every member, member after member (shard numbers repeat).
                            for (v1::ShardStats& shard : *one.mutable_shards()) out->add_shards()->Swap(&shard);
                            for (const v1::NamespaceStats& ns : one.namespaces()) {
                              v1::NamespaceStats& sum = namespaces[ns.namespace_()];
                              sum.set_namespace_(ns.namespace_());
                              sum.set_pending_timers(sum.pending_timers() + ns.pending_timers());
                              sum.set_outbox(sum.outbox() + ns.outbox());
                              sum.set_subscribers(sum.subscribers() + ns.subscribers());
                            }
                          }
                          for (auto& [name, ns] : namespaces) out->add_namespaces()->Swap(&ns);
                          return grpc::Status::OK;
                        });
}

void TimerServiceImpl::ForwardStarts(grpc::CallbackServerContext* context, ClusterRouter* router,
                                     const std::string& address, std::vector<uint32_t> items,
                                     std::shared_ptr<StartBatch> batch) {
  // The owner's part of the request: each of its items as the client encoded it (field 1, timers).
  v1::StartTimersRequest part;
  part.set_return_timers(batch->return_timers);
  std::string encoded = part.SerializeAsString();
  for (uint32_t i : items) AppendStartItem(batch->items[i].encoded, &encoded);
  grpc::Slice slice(encoded.data(), encoded.size());  // A copy: this gRPC's Slice cannot adopt a string.
  grpc::ByteBuffer bytes(&slice, 1);
  router->Forward(
      address, "/lawn.v1.TimerService/StartTimers", *context, bytes,
      [items = std::move(items), batch = std::move(batch)](const grpc::Status& status, const grpc::ByteBuffer& raw) {
        v1::StartTimersResponse answer;
        if (status.ok() && (!ParseMessage(raw, &answer) || answer.results_size() != static_cast<int>(items.size()))) {
          for (uint32_t i : items) batch->ops[i].status = absl::InternalError("the owner's answer does not parse");
        } else {
          for (size_t j = 0; j < items.size(); ++j) {
            StartOp& op = batch->ops[items[j]];
            if (!status.ok()) {
              op.status = absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
              continue;
            }
            v1::StartTimerResult* result = answer.mutable_results(static_cast<int>(j));
            op.status = absl::Status(static_cast<absl::StatusCode>(result->code()), result->message());
            // Finish fills code and message; the timer, when asked for, is the owner's.
            if (result->has_timer()) {
              batch->batch_response->mutable_results(static_cast<int>(items[j]))->mutable_timer()->Swap(
                  result->mutable_timer());
            }
          }
        }
        if (batch->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) batch->Finish();
      });
}

bool TimerServiceImpl::RouteElsewhere(grpc::CallbackServerContext* context, UnaryCall* call, const char* method,
                                      const grpc::ByteBuffer* raw_request, std::string_view key) {
  if (!cluster_mode_.load(std::memory_order_acquire)) return false;
  ClusterRouter* router = router_.load(std::memory_order_acquire);
  if (router == nullptr) {
    Reject(context, call, method, absl::UnavailableError("lawnd is joining its cluster; retry shortly"));
    return true;
  }
  const auto [ns, id] = Runtime::SplitKey(key);
  const Placement placement = router->Place(ns, id);
  switch (placement.kind) {
    case Placement::Kind::kLocal:
      return false;
    case Placement::Kind::kRefuse:
      Reject(context, call, method, placement.status);
      return true;
    case Placement::Kind::kForward:
      if (ClusterRouter::IsForwarded(*context)) {
        Reject(context, call, method, router->WrongOwner(placement));
        return true;
      }
      if (Metrics* m = runtime_.metrics()) m->forwarded_calls().Increment();
      router->Forward(placement.address, std::string("/lawn.v1.TimerService/") + method, *context, *raw_request,
                      [call](const grpc::Status& status, const grpc::ByteBuffer& response) {
                        call->ReplyBytes(status, response);
                      });
      return true;
  }
  return false;
}

}  // namespace lawn
