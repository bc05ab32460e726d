// EtcdClient (cluster/etcd_client.h): etcd's KV and Lease services, one synchronous call each.
#include "cluster/etcd_client.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace lawn {
namespace {

absl::Status FromGrpc(const grpc::Status& status, std::string_view what) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat("etcd ", std::string(what), ": ", status.error_message()));
}

EtcdKeyValue FromProto(const mvccpb::KeyValue& kv) {
  return EtcdKeyValue{kv.key(), kv.value(), kv.create_revision(), kv.mod_revision(), kv.lease()};
}

bool IsHostPort(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  uint32_t port = 0;
  return colon != std::string::npos && colon > 0 &&
         absl::SimpleAtoi(endpoint.substr(colon + 1), &port) && port > 0 && port < 65536;
}

}  // namespace

std::string EtcdPrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<unsigned char>(prefix.back()) < 0xff) {
      prefix.back() = static_cast<char>(prefix.back() + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');  // Every key.
}

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Connect(const EtcdClientOptions& options) {
  if (options.endpoints.empty()) return absl::InvalidArgumentError("etcd: no endpoints");
  for (const std::string& e : options.endpoints) {
    if (!IsHostPort(e)) {
      return absl::InvalidArgumentError(absl::StrCat("etcd endpoint '", e, "' is not host:port"));
    }
  }
  // One endpoint: a plain target (DNS names resolve as usual). Several: gRPC's ipv4: list with pick_first,
  // which moves to the next address when one fails; that takes IP literals only (a list of names would
  // need a resolver of its own), so such a list is refused rather than made into a channel that never works.
  std::string target = options.endpoints[0];
  if (options.endpoints.size() > 1) {
    for (const std::string& e : options.endpoints) {
      in_addr addr{};
      if (inet_pton(AF_INET, e.substr(0, e.rfind(':')).c_str(), &addr) != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "etcd endpoint '", e, "': several endpoints must be IPv4 ip:port; give one name (a DNS name "
            "that resolves to every member, such as a headless Service) instead of a list of names"));
      }
    }
    target = absl::StrCat("ipv4:", absl::StrJoin(options.endpoints, ","));
  }
  grpc::ChannelArguments args;
  // Keepalive pings find a member that stopped answering without closing the connection, so pick_first
  // moves on; etcd's default enforcement allows pings every 5 s.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // A range over every owner key of a large cluster passes gRPC's default 4 MiB.
  args.SetMaxReceiveMessageSize(64 << 20);
  auto channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  return std::unique_ptr<EtcdClient>(new EtcdClient(std::move(channel), options.call_timeout));
}

EtcdClient::EtcdClient(std::shared_ptr<grpc::Channel> channel, std::chrono::milliseconds call_timeout)
    : channel_(channel),
      call_timeout_(call_timeout),
      kv_(etcdserverpb::KV::NewStub(channel)),
      lease_(etcdserverpb::Lease::NewStub(channel)) {}

void EtcdClient::Prepare(grpc::ClientContext& context) const {
  context.set_deadline(std::chrono::system_clock::now() + call_timeout_);
}

absl::StatusOr<std::optional<EtcdKeyValue>> EtcdClient::Get(const std::string& key) {
  etcdserverpb::RangeRequest request;
  request.set_key(key);
  etcdserverpb::RangeResponse response;
  grpc::ClientContext context;
  Prepare(context);
  if (absl::Status s = FromGrpc(kv_->Range(&context, request, &response), "range"); !s.ok()) return s;
  if (response.kvs_size() == 0) return std::optional<EtcdKeyValue>();
  return std::optional<EtcdKeyValue>(FromProto(response.kvs(0)));
}

absl::StatusOr<EtcdClient::Range> EtcdClient::GetPrefix(const std::string& prefix) {
  etcdserverpb::RangeRequest request;
  request.set_key(prefix);
  request.set_range_end(EtcdPrefixEnd(prefix));
  etcdserverpb::RangeResponse response;
  grpc::ClientContext context;
  Prepare(context);
  if (absl::Status s = FromGrpc(kv_->Range(&context, request, &response), "range"); !s.ok()) return s;
  Range range;
  range.revision = response.header().revision();
  range.kvs.reserve(response.kvs_size());
  for (const mvccpb::KeyValue& kv : response.kvs()) range.kvs.push_back(FromProto(kv));
  return range;
}

absl::StatusOr<std::vector<EtcdClient::Range>> EtcdClient::GetPrefixes(
    const std::vector<std::string>& prefixes) {
  etcdserverpb::TxnRequest request;  // No comparison: the success branch always runs, at one revision.
  for (const std::string& prefix : prefixes) {
    etcdserverpb::RangeRequest* range = request.add_success()->mutable_request_range();
    range->set_key(prefix);
    range->set_range_end(EtcdPrefixEnd(prefix));
  }
  etcdserverpb::TxnResponse response;
  grpc::ClientContext context;
  Prepare(context);
  if (absl::Status s = FromGrpc(kv_->Txn(&context, request, &response), "txn"); !s.ok()) return s;
  if (response.responses_size() != static_cast<int>(prefixes.size())) {
    return absl::InternalError(absl::StrCat("etcd txn: ", response.responses_size(), " answers to ",
                                            prefixes.size(), " ranges"));
  }
  std::vector<Range> ranges(prefixes.size());
  for (size_t i = 0; i < prefixes.size(); ++i) {
    const etcdserverpb::RangeResponse& answer = response.responses(static_cast<int>(i)).response_range();
    ranges[i].revision = response.header().revision();
    ranges[i].kvs.reserve(answer.kvs_size());
    for (const mvccpb::KeyValue& kv : answer.kvs()) ranges[i].kvs.push_back(FromProto(kv));
  }
  return ranges;
}

absl::StatusOr<int64_t> EtcdClient::Put(const std::string& key, const std::string& value, int64_t lease) {
  etcdserverpb::PutRequest request;
  request.set_key(key);
  request.set_value(value);
  request.set_lease(lease);
  etcdserverpb::PutResponse response;
  grpc::ClientContext context;
  Prepare(context);
  if (absl::Status s = FromGrpc(kv_->Put(&context, request, &response), "put"); !s.ok()) return s;
  return response.header().revision();
}

absl::StatusOr<int64_t> EtcdClient::Delete(const std::string& key) {
  etcdserverpb::DeleteRangeRequest request;
  request.set_key(key);
  etcdserverpb::DeleteRangeResponse response;
  grpc::ClientContext context;
  Prepare(context);
  if (absl::Status s = FromGrpc(kv_->DeleteRange(&context, request, &response), "delete"); !s.ok()) return s;
  return response.deleted();
}

absl::StatusOr<std::optional<int64_t>> EtcdClient::PutIfModRevision(const std::string& key, const std::string& value,
                                                                    int64_t expected_mod_revision, int64_t lease) {
  // A key that does not exist compares as revision 0. The transaction's revision is the key's new one.
  return PutAllIfModRevisions({{key, value, expected_mod_revision, lease}});
}

absl::StatusOr<std::optional<int64_t>> EtcdClient::PutAllIfModRevisions(const std::vector<ConditionalPut>& puts,
                                                                        const std::vector<CreateGuard>& guards) {
  etcdserverpb::TxnRequest request;
  for (const CreateGuard& g : guards) {
    etcdserverpb::Compare* compare = request.add_compare();
    compare->set_key(g.key);
    compare->set_target(etcdserverpb::Compare::CREATE);
    compare->set_result(etcdserverpb::Compare::EQUAL);
    compare->set_create_revision(g.create_revision);
  }
  for (const ConditionalPut& p : puts) {
    etcdserverpb::Compare* compare = request.add_compare();
    compare->set_key(p.key);
    compare->set_target(etcdserverpb::Compare::MOD);
    compare->set_result(etcdserverpb::Compare::EQUAL);
    compare->set_mod_revision(p.expected_mod_revision);
    etcdserverpb::PutRequest* put = request.add_success()->mutable_request_put();
    put->set_key(p.key);
    put->set_value(p.value);
    put->set_lease(p.lease);
  }
  etcdserverpb::TxnResponse response;
  grpc::ClientContext context;
  Prepare(context);
  if (absl::Status s = FromGrpc(kv_->Txn(&context, request, &response), "txn"); !s.ok()) return s;
  if (!response.succeeded()) return std::optional<int64_t>();
  return std::optional<int64_t>(response.header().revision());
}

absl::StatusOr<int64_t> EtcdClient::GrantLease(std::chrono::seconds ttl) {
  if (ttl.count() < 1) return absl::InvalidArgumentError("etcd lease TTL must be at least 1 s");
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl.count());
  etcdserverpb::LeaseGrantResponse response;
  grpc::ClientContext context;
  Prepare(context);
  if (absl::Status s = FromGrpc(lease_->LeaseGrant(&context, request, &response), "lease grant"); !s.ok()) {
    return s;
  }
  if (!response.error().empty()) return absl::UnavailableError(absl::StrCat("etcd lease grant: ", response.error()));
  return response.id();
}

absl::StatusOr<std::chrono::seconds> EtcdClient::KeepAliveOnce(int64_t lease) {
  // LeaseKeepAlive is a stream in etcd's API; one request and its answer renew the lease once. A stream per
  // renewal costs a little more than one long-lived stream but keeps each renewal bounded by the timeout,
  // which is what the fencing clock needs (LeaseKeeper).
  grpc::ClientContext context;
  Prepare(context);
  auto stream = lease_->LeaseKeepAlive(&context);
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease);
  etcdserverpb::LeaseKeepAliveResponse response;
  const bool exchanged = stream->Write(request) && stream->WritesDone() && stream->Read(&response);
  if (!exchanged) {
    context.TryCancel();
    grpc::Status status = stream->Finish();
    if (status.ok()) return absl::UnavailableError("etcd lease keep-alive: the stream ended without an answer");
    return FromGrpc(status, "lease keep-alive");
  }
  context.TryCancel();  // Done with the stream; do not wait for etcd to end it.
  stream->Finish();
  if (response.ttl() <= 0) {
    return absl::NotFoundError(absl::StrCat("etcd lease ", lease, " has expired or was revoked"));
  }
  return std::chrono::seconds(response.ttl());
}

std::unique_ptr<EtcdWatch> EtcdClient::Watch(std::string prefix, std::function<void()> changed) {
  return std::make_unique<EtcdWatch>(channel_, std::move(prefix), std::move(changed));
}

absl::Status EtcdClient::RevokeLease(int64_t lease) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease);
  etcdserverpb::LeaseRevokeResponse response;
  grpc::ClientContext context;
  Prepare(context);
  return FromGrpc(lease_->LeaseRevoke(&context, request, &response), "lease revoke");
}

}  // namespace lawn
