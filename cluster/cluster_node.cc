// ClusterNode (cluster/cluster_node.h): registration, leadership and the ownership map of one member.
#include "cluster/cluster_node.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "cluster/assignment.h"
#include "cluster/formation.h"
#include "cluster/partition.h"
#include "spdlog/spdlog.h"

namespace lawn {

absl::StatusOr<std::unique_ptr<ClusterNode>> ClusterNode::Join(const ClusterNodeOptions& options) {
  if (options.member.empty() || options.advertise.empty() || options.etcd_endpoints.empty()) {
    return absl::InvalidArgumentError("cluster mode needs etcd endpoints, a member name and an advertise address");
  }
  EtcdClientOptions etcd_options;
  etcd_options.endpoints = options.etcd_endpoints;
  absl::StatusOr<std::unique_ptr<EtcdClient>> etcd = EtcdClient::Connect(etcd_options);
  if (!etcd.ok()) return etcd.status();
  if (absl::Status s = AgreePartitions(**etcd, options.cluster, options.partitions); !s.ok()) return s;
  std::unique_ptr<ClusterNode> node(new ClusterNode(options, std::move(*etcd)));
  LeaseKeeperOptions lease_options;
  lease_options.ttl = options.lease_ttl;
  absl::StatusOr<std::unique_ptr<LeaseKeeper>> keeper = LeaseKeeper::Start(*node->etcd_, lease_options);
  if (!keeper.ok()) return keeper.status();
  node->keeper_ = std::move(*keeper);
  node->keeper_view_.store(node->keeper_.get(), std::memory_order_release);
  node->thread_ = std::thread([n = node.get()] { n->Run(); });
  node->watch_ = node->etcd_->Watch("/" + options.cluster + "/", [n = node.get()] { n->AskRefresh(); });
  return node;
}

ClusterNode::ClusterNode(const ClusterNodeOptions& options, std::unique_ptr<EtcdClient> etcd)
    : options_(options), etcd_(std::move(etcd)) {
  auto empty = std::make_shared<ClusterMap>();
  empty->cluster = options.cluster;
  empty->self = options.member;
  empty->partitions = options.partitions;
  empty->owners.resize(options.partitions);
  empty->epochs.resize(options.partitions, 0);
  absl::MutexLock lock(&map_mu_);
  map_ = std::move(empty);
}

ClusterNode::~ClusterNode() { Leave(); }

void ClusterNode::Leave() {
  std::call_once(leave_once_, [this] {
    watch_.reset();  // Its thread calls AskRefresh: gone before the refresh thread is.
    {
      std::lock_guard<std::mutex> lock(sleep_mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    published_.notify_all();
    if (thread_.joinable()) thread_.join();
    registered_.store(false, std::memory_order_release);
    if (keeper_ != nullptr) {
      if (absl::Status s = keeper_->Revoke(); !s.ok()) {
        spdlog::warn("cluster: revoking the lease of member {} failed ({}); its key goes when the lease expires",
                     options_.member, s.ToString());
      }
    }
  });
}

bool ClusterNode::Fresh() const {
  const LeaseKeeper* keeper = keeper_view_.load(std::memory_order_acquire);
  return registered_.load(std::memory_order_acquire) && keeper != nullptr && keeper->Fresh();
}

uint32_t ClusterNode::PartitionOf(std::string_view ns, std::string_view id) const {
  return lawn::PartitionOf(ns, id, options_.partitions);
}

Placement ClusterNode::Place(uint32_t partition) const {
  Placement placement;
  placement.partition = partition;
  const std::shared_ptr<const ClusterMap> map = this->map();
  if (partition >= map->owners.size() || map->owners[partition].empty()) {
    placement.status = absl::UnavailableError(
        absl::StrCat("partition ", partition, " has no owner yet (the cluster is forming: ", map->live.size(),
                     " of cluster.expect_members ", options_.expect_members, " members live); retry shortly"));
    return placement;
  }
  placement.owner = map->owners[partition];
  if (placement.owner == options_.member) {
    if (!Fresh()) {
      placement.status = absl::UnavailableError(absl::StrCat(
          "member ", options_.member, " owns partition ", partition,
          " but cannot prove its etcd lease is alive (etcd unreachable or the member was paused); retry shortly"));
      return placement;
    }
    placement.kind = Placement::Kind::kLocal;
    return placement;
  }
  const auto live = map->live.find(placement.owner);
  if (live == map->live.end()) {
    placement.status = absl::UnavailableError(
        absl::StrCat("partition ", partition, " belongs to member ", placement.owner,
                     ", which is not live (its timers wait on its volume until it restarts); retry later"));
    return placement;
  }
  placement.kind = Placement::Kind::kForward;
  placement.address = live->second;
  return placement;
}

bool ClusterNode::SleepFor(std::chrono::milliseconds duration) {
  std::unique_lock<std::mutex> lock(sleep_mu_);
  wake_.wait_for(lock, duration, [this] { return stopping_ || refresh_asked_; });
  // The pass about to start reads etcd after every RefreshNow so far.
  refresh_asked_ = false;
  current_pass_ = ++passes_started_;
  return !stopping_;
}

void ClusterNode::SetMapListener(std::function<void(const ClusterMap&)> listener) {
  absl::MutexLock lock(&hooks_mu_);
  map_listener_ = std::move(listener);
}

void ClusterNode::SetMoveDriver(
    std::function<void(const Assignment& target, std::shared_ptr<const ClusterMap> map)> driver) {
  absl::MutexLock lock(&hooks_mu_);
  move_driver_ = std::move(driver);
}

void ClusterNode::AskRefresh() {
  {
    std::lock_guard<std::mutex> lock(sleep_mu_);
    refresh_asked_ = true;
  }
  wake_.notify_all();
}

bool ClusterNode::RefreshNow(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(sleep_mu_);
  // A pass that is running now may have read etcd before this call: wait for one that starts after it.
  const uint64_t wanted = passes_started_ + 1;
  refresh_asked_ = true;
  wake_.notify_all();
  return published_.wait_for(lock, timeout, [&] { return stopping_ || published_pass_ >= wanted; }) && !stopping_;
}

absl::StatusOr<int64_t> ClusterNode::MemberIncarnation(const std::string& member) {
  absl::StatusOr<std::optional<EtcdKeyValue>> key = etcd_->Get(MemberKey(options_.cluster, member));
  if (!key.ok()) return key.status();
  if (!key->has_value()) return absl::NotFoundError(absl::StrCat("member ", member, " is not live"));
  return (*key)->create_revision;
}

absl::StatusOr<bool> ClusterNode::Transfer(const std::vector<uint32_t>& partitions,
                                           const std::vector<int64_t>& epochs, const std::string& to,
                                           int64_t to_incarnation) {
  std::vector<EtcdClient::ConditionalPut> puts;
  puts.reserve(partitions.size());
  for (size_t i = 0; i < partitions.size(); ++i) {
    puts.push_back({OwnerKey(options_.cluster, partitions[i]), to, epochs[i]});
  }
  absl::StatusOr<std::optional<int64_t>> written =
      etcd_->PutAllIfModRevisions(puts, {{MemberKey(options_.cluster, to), to_incarnation}});
  if (!written.ok()) return written.status();
  return written->has_value();
}

absl::Status ClusterNode::SetDraining(const std::string& member, bool draining) {
  const std::string key = DrainingKey(options_.cluster, member);
  if (draining) return etcd_->Put(key, "").status();
  return etcd_->Delete(key).status();
}

void ClusterNode::Run() {
  absl::Status last = absl::OkStatus();
  do {
    absl::Status s = Refresh();
    // Log a failure once per change of cause, not once per pass.
    if (!s.ok() && s.ToString() != last.ToString()) {
      spdlog::warn("cluster: member {}: {}", options_.member, s.ToString());
    } else if (s.ok() && !last.ok()) {
      spdlog::info("cluster: member {}: etcd answers again", options_.member);
    }
    last = s;
  } while (SleepFor(options_.refresh_every));
}

absl::StatusOr<bool> ClusterNode::Register() {
  if (registered_.load(std::memory_order_acquire)) return true;
  const std::string key = MemberKey(options_.cluster, options_.member);
  absl::StatusOr<std::optional<int64_t>> put =
      etcd_->PutIfModRevision(key, options_.advertise, 0, keeper_->lease());
  if (!put.ok()) return put.status();
  if (!put->has_value()) {
    // Ours already if an earlier attempt wrote it but its answer was lost; otherwise held by an earlier lease
    // of this name: a previous run that was killed (its lease runs out within the TTL), or another live
    // process with the same name, which must not serve the same partitions.
    absl::StatusOr<std::optional<EtcdKeyValue>> held = etcd_->Get(key);
    if (!held.ok()) return held.status();
    if (!held->has_value() || (*held)->lease != keeper_->lease() || (*held)->value != options_.advertise) {
      return false;
    }
  }
  // A member that (re)starts takes partitions again: a drain ends with the process it drained.
  if (absl::StatusOr<int64_t> undrained = etcd_->Delete(DrainingKey(options_.cluster, options_.member));
      !undrained.ok()) {
    return undrained.status();
  }
  registered_.store(true, std::memory_order_release);
  spdlog::info("cluster: member {} joined cluster {} at {} (lease {:x}, ttl {} s)", options_.member,
               options_.cluster, options_.advertise, keeper_->lease(), keeper_->ttl().count());
  return true;
}

absl::StatusOr<std::shared_ptr<ClusterMap>> ClusterNode::ReadMap() {
  const std::string& c = options_.cluster;
  // One transaction: members, owners, draining marks and the leader as of one revision, so the map never
  // pairs an ownership table with a membership from another moment.
  absl::StatusOr<std::vector<EtcdClient::Range>> read =
      etcd_->GetPrefixes({MembersPrefix(c), OwnersPrefix(c), DrainingPrefix(c), LeaderKey(c)});
  if (!read.ok()) return read.status();
  const std::vector<EtcdClient::Range>& ranges = *read;
  absl::StatusOr<OwnerTable> owners = ParseOwners(ranges[1], c, options_.partitions);
  if (!owners.ok()) return owners.status();
  auto map = std::make_shared<ClusterMap>();
  map->cluster = c;
  map->self = options_.member;
  map->partitions = options_.partitions;
  for (const EtcdKeyValue& kv : ranges[0].kvs) {
    map->live.emplace(kv.key.substr(MembersPrefix(c).size()), kv.value);
  }
  map->owners = std::move(owners->owners);
  map->epochs = std::move(owners->epochs);
  for (const EtcdKeyValue& kv : ranges[2].kvs) map->draining.insert(kv.key.substr(DrainingPrefix(c).size()));
  for (const EtcdKeyValue& kv : ranges[3].kvs) {
    if (kv.key == LeaderKey(c)) map->leader = kv.value;  // A prefix read: only the exact key counts.
  }
  return map;
}

absl::Status ClusterNode::Refresh() {
  if (keeper_->lost()) {
    // etcd dropped the lease (it expired while this member could not renew it): its member key went with
    // it. Start over with a new lease; the partitions it owns stay its own.
    registered_.store(false, std::memory_order_release);
    LeaseKeeperOptions lease_options;
    lease_options.ttl = options_.lease_ttl;
    absl::StatusOr<std::unique_ptr<LeaseKeeper>> keeper = LeaseKeeper::Start(*etcd_, lease_options);
    if (!keeper.ok()) return keeper.status();
    spdlog::warn("cluster: member {} lost its lease; registering again under a new one", options_.member);
    retired_.push_back(std::move(keeper_));
    keeper_ = std::move(*keeper);
    keeper_view_.store(keeper_.get(), std::memory_order_release);
  }
  absl::StatusOr<bool> registered = Register();
  if (!registered.ok()) return registered.status();
  if (!*registered) {
    return absl::AlreadyExistsError(absl::StrCat("member key of ", options_.member,
                                                 " is held by an earlier lease; waiting for it to expire"));
  }
  absl::StatusOr<bool> leading = TryLead(*etcd_, options_.cluster, options_.member, keeper_->lease());
  if (!leading.ok()) return leading.status();

  absl::StatusOr<std::shared_ptr<ClusterMap>> map = ReadMap();
  if (!map.ok()) return map.status();
  if (*leading && (*map)->live.size() >= options_.expect_members) {
    bool unowned = false;
    for (const std::string& owner : (*map)->owners) unowned |= owner.empty();
    if (unowned) {
      AssignmentInput input;
      input.owners = (*map)->owners;
      for (const auto& [name, address] : (*map)->live) input.live.insert(name);
      absl::StatusOr<int> claimed = ClaimUnowned(*etcd_, options_.cluster, Assign(input));
      if (!claimed.ok()) return claimed.status();
      spdlog::info("cluster: leader {} handed out {} partitions among {} members", options_.member, *claimed,
                   (*map)->live.size());
      map = ReadMap();
      if (!map.ok()) return map.status();
    }
  }
  (*map)->generation = ++generation_;
  std::shared_ptr<const ClusterMap> published = *map;
  {
    absl::MutexLock lock(&map_mu_);
    map_ = published;
  }
  std::function<void(const ClusterMap&)> listener;
  std::function<void(const Assignment&, std::shared_ptr<const ClusterMap>)> driver;
  {
    absl::MutexLock lock(&hooks_mu_);
    listener = map_listener_;
    driver = move_driver_;
  }
  if (listener) listener(*published);
  {
    std::lock_guard<std::mutex> lock(sleep_mu_);
    published_pass_ = current_pass_;
  }
  published_.notify_all();
  if (*leading && driver) {
    // Moves start once every partition has an owner (a forming cluster hands them out first).
    bool unowned = false;
    for (const std::string& owner : published->owners) unowned |= owner.empty();
    if (!unowned) {
      AssignmentInput input;
      input.owners = published->owners;
      for (const auto& [name, address] : published->live) input.live.insert(name);
      for (const std::string& name : published->draining) {
        if (input.live.count(name) > 0) input.draining.insert(name);
      }
      Assignment target = Assign(input);
      if (!target.moves.empty()) driver(target, published);
    }
  }
  return absl::OkStatus();
}

}  // namespace lawn
