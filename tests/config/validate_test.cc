// Range checks: every key's bounds, each as one test case. A value just outside is rejected with a message
// naming the key and the allowed values; the bound itself is accepted and parsed to exactly that value.
#include <chrono>
#include <ostream>
#include <string>

#include "config/config.h"
#include "gtest/gtest.h"
#include "tests/config/config_testing.h"

namespace lawn {
namespace {

struct RangeCase {
  const char* name;  // Test name suffix.
  const char* yaml;
  const char* message;  // Expected in the error.
};

std::ostream& operator<<(std::ostream& out, const RangeCase& c) { return out << c.yaml; }

std::string CaseName(const ::testing::TestParamInfo<RangeCase>& info) { return info.param.name; }

class RejectedValueTest : public ::testing::TestWithParam<RangeCase> {};

TEST_P(RejectedValueTest, IsRejectedNamingTheKeyAndWhatIsAllowed) {
  EXPECT_TRUE(config_testing::IsInvalid(LoadOptionsFromYaml(GetParam().yaml).status(), GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    ConfigTest, RejectedValueTest,
    ::testing::Values(
        RangeCase{"ShardsAbove256", "shards: 257",
                  "config key 'shards': 257 is out of range; allowed 0..256 (0 = one per CPU core)"},
        RangeCase{"ShardsPast32Bits", "shards: 5000000000",
                  "config key 'shards': 5000000000 is out of range"},
        RangeCase{"ShardsPast64Bits", "shards: 99999999999999999999999",
                  "config key 'shards': 99999999999999999999999 is out of range"},
        RangeCase{"TickBelow1us", "tick: 999ns", "config key 'tick': 999ns is out of range; allowed 1us..1s"},
        RangeCase{"TickAbove1s", "tick: 1001ms",
                  "config key 'tick': 1001ms is out of range; allowed 1us..1s"},
        RangeCase{"MaxPayloadAbove4MiB", "max_payload_bytes: 5MiB\nmax_message_bytes: 64MiB",
                  "config key 'max_payload_bytes': 5MiB is out of range; allowed 0..4MiB"},
        RangeCase{"MaxPendingTimersZero", "max_pending_timers: 0",
                  "config key 'max_pending_timers': 0 is out of range; allowed 1 or more"},
        RangeCase{"AckTimeoutBelow100ms", "ack_timeout: 99ms",
                  "config key 'ack_timeout': 99ms is out of range; allowed 100ms..1h"},
        RangeCase{"AckTimeoutAbove1h", "ack_timeout: 61m", "config key 'ack_timeout': 61m is out of range"},
        RangeCase{"MaxInFlightZero", "max_in_flight: 0",
                  "config key 'max_in_flight': 0 is out of range; allowed 1..100000"},
        RangeCase{"MaxInFlightAbove100000", "max_in_flight: 100001",
                  "config key 'max_in_flight': 100001 is out of range"},
        RangeCase{"SyncIntervalBelow1ms", "sync_interval: 999us",
                  "config key 'sync_interval': 999us is out of range; allowed 1ms..10s"},
        RangeCase{"SyncIntervalAbove10s", "sync_interval: 11s",
                  "config key 'sync_interval': 11s is out of range"},
        RangeCase{"MaxMessageBelow64KiB", "max_message_bytes: 65535\nmax_payload_bytes: 0",
                  "config key 'max_message_bytes': 65535 is out of range; allowed 64KiB..64MiB"},
        RangeCase{"MaxMessageAbove64MiB", "max_message_bytes: 65MiB",
                  "config key 'max_message_bytes': 65MiB is out of range"},
        RangeCase{"WriteBufferBelow16MiB", "write_buffer_bytes: 8MiB",
                  "config key 'write_buffer_bytes': 8MiB is out of range; allowed 16MiB..64GiB"},
        RangeCase{"WriteBufferAbove64GiB", "write_buffer_bytes: 65GiB",
                  "config key 'write_buffer_bytes': 65GiB is out of range"},
        RangeCase{"ShutdownTimeoutAbove10m", "shutdown_timeout: 601s",
                  "config key 'shutdown_timeout': 601s is out of range; allowed 0s..10m"},
        RangeCase{"LogLevelUnknown", "log_level: verbose",
                  "config key 'log_level': \"verbose\" is not allowed; use trace, debug, info, warn, error, "
                  "critical or off"},
        RangeCase{"LogLevelUpperCase", "log_level: INFO", "config key 'log_level': \"INFO\" is not allowed"},
        RangeCase{"LogFormatUnknown", "log_format: xml",
                  "config key 'log_format': \"xml\" is not allowed; use text or json"},
        RangeCase{"LawnMaxBucketsZero", "lawn_max_buckets: 0",
                  "config key 'lawn_max_buckets': 0 is out of range; allowed 1..65535"},
        RangeCase{"LawnMaxBucketsAbove65535", "lawn_max_buckets: 65536",
                  "config key 'lawn_max_buckets': 65536 is out of range"},
        RangeCase{"LawnPromoteAfterZero", "lawn_promote_after: 0",
                  "config key 'lawn_promote_after': 0 is out of range; allowed 1..1000"},
        RangeCase{"LawnPromoteAfterAbove1000", "lawn_promote_after: 1001",
                  "config key 'lawn_promote_after': 1001 is out of range"},
        RangeCase{"ListenWithoutPort", "listen: localhost",
                  "config key 'listen': \"localhost\" is not a host:port address; use e.g. 127.0.0.1:7070"},
        RangeCase{"ListenWithoutHost", "listen: \":7070\"",
                  "config key 'listen': \":7070\" is not a host:port"},
        RangeCase{"ListenPortAbove65535", "listen: 127.0.0.1:65536",
                  "config key 'listen': \"127.0.0.1:65536\" is not"},
        RangeCase{"ListenUnbracketedIpv6", "listen: \"::1:7070\"",
                  "config key 'listen': \"::1:7070\" is not"},
        RangeCase{"ListenEmpty", "listen: \"\"", "config key 'listen': \"\" is not a host:port address"},
        RangeCase{"MetricsListenWithoutPort", "metrics_listen: metrics",
                  "config key 'metrics_listen': \"metrics\" is not a host:port address"},
        RangeCase{"DataDirEmpty", "data_dir: \"\"", "config key 'data_dir': an empty path is not allowed"}),
    CaseName);

// An accepted value: the YAML, and the change it must make to the resolved defaults (everything else stays as
// it was).
struct AcceptedCase {
  const char* name;  // Test name suffix.
  const char* yaml;
  void (*expect)(Options& options);  // Applies the expected change to the resolved defaults.
};

std::ostream& operator<<(std::ostream& out, const AcceptedCase& c) { return out << c.yaml; }

std::string AcceptedName(const ::testing::TestParamInfo<AcceptedCase>& info) { return info.param.name; }

class AcceptedValueTest : public ::testing::TestWithParam<AcceptedCase> {};

TEST_P(AcceptedValueTest, IsAcceptedAndParsedToTheValueWritten) {
  const absl::StatusOr<Options> defaults = LoadOptionsFromYaml("");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  const absl::StatusOr<Options> options = LoadOptionsFromYaml(GetParam().yaml);
  ASSERT_TRUE(options.ok()) << options.status();
  Options expected = *defaults;
  GetParam().expect(expected);
  // Field by field first, for a readable failure; then the whole struct, so no other field moved.
  EXPECT_EQ(options->shards, expected.shards);
  EXPECT_EQ(options->tick, expected.tick);
  EXPECT_EQ(options->max_payload_bytes, expected.max_payload_bytes);
  EXPECT_EQ(options->max_pending_timers, expected.max_pending_timers);
  EXPECT_EQ(options->max_pending_per_namespace, expected.max_pending_per_namespace);
  EXPECT_EQ(options->ack_timeout, expected.ack_timeout);
  EXPECT_EQ(options->max_in_flight, expected.max_in_flight);
  EXPECT_EQ(options->sync_interval, expected.sync_interval);
  EXPECT_EQ(options->max_message_bytes, expected.max_message_bytes);
  EXPECT_EQ(options->min_free_disk_bytes, expected.min_free_disk_bytes);
  EXPECT_EQ(options->shutdown_timeout, expected.shutdown_timeout);
  EXPECT_EQ(options->lawn_max_buckets, expected.lawn_max_buckets);
  EXPECT_EQ(options->lawn_promote_after, expected.lawn_promote_after);
  EXPECT_EQ(options->listen, expected.listen);
  EXPECT_EQ(options->metrics_listen, expected.metrics_listen);
  EXPECT_TRUE(*options == expected) << "a field other than the ones the case sets changed";
}

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

INSTANTIATE_TEST_SUITE_P(
    ConfigTest, AcceptedValueTest,
    ::testing::Values(
        AcceptedCase{"Shards1", "shards: 1", [](Options& o) { o.shards = 1; }},
        AcceptedCase{"Shards256", "shards: 256", [](Options& o) { o.shards = 256; }},
        AcceptedCase{"Tick1us", "tick: 1us", [](Options& o) { o.tick = microseconds(1); }},
        AcceptedCase{"Tick1s", "tick: 1s", [](Options& o) { o.tick = seconds(1); }},
        AcceptedCase{"MaxPayloadZero", "max_payload_bytes: 0", [](Options& o) { o.max_payload_bytes = 0; }},
        AcceptedCase{"MaxPayload4MiB", "max_payload_bytes: 4MiB\nmax_message_bytes: 64MiB",
                     [](Options& o) {
                       o.max_payload_bytes = 4u << 20;
                       o.max_message_bytes = 64u << 20;
                     }},
        // The per-namespace limit was left at 0, so it resolves to the new global limit.
        AcceptedCase{"MaxPendingTimers1", "max_pending_timers: 1",
                     [](Options& o) { o.max_pending_timers = o.max_pending_per_namespace = 1; }},
        AcceptedCase{"PerNamespaceEqualToGlobal", "max_pending_timers: 9\nmax_pending_per_namespace: 9",
                     [](Options& o) { o.max_pending_timers = o.max_pending_per_namespace = 9; }},
        AcceptedCase{"PerNamespaceBelowGlobal", "max_pending_timers: 9\nmax_pending_per_namespace: 4",
                     [](Options& o) {
                       o.max_pending_timers = 9;
                       o.max_pending_per_namespace = 4;
                     }},
        AcceptedCase{"AckTimeout100ms", "ack_timeout: 100ms", [](Options& o) { o.ack_timeout = milliseconds(100); }},
        AcceptedCase{"AckTimeout1h", "ack_timeout: 1h", [](Options& o) { o.ack_timeout = hours(1); }},
        AcceptedCase{"MaxInFlight1", "max_in_flight: 1", [](Options& o) { o.max_in_flight = 1; }},
        AcceptedCase{"MaxInFlight100000", "max_in_flight: 100000", [](Options& o) { o.max_in_flight = 100000; }},
        AcceptedCase{"SyncInterval1ms", "sync_interval: 1ms", [](Options& o) { o.sync_interval = milliseconds(1); }},
        AcceptedCase{"SyncInterval10s", "sync_interval: 10s", [](Options& o) { o.sync_interval = seconds(10); }},
        AcceptedCase{"MaxMessage64KiB", "max_message_bytes: 64KiB\nmax_payload_bytes: 1KiB",
                     [](Options& o) {
                       o.max_message_bytes = 64u << 10;
                       o.max_payload_bytes = 1u << 10;
                     }},
        AcceptedCase{"MaxMessage64MiB", "max_message_bytes: 64MiB", [](Options& o) { o.max_message_bytes = 64u << 20; }},
        AcceptedCase{"MinFreeDiskZero", "min_free_disk_bytes: 0", [](Options& o) { o.min_free_disk_bytes = 0; }},
        AcceptedCase{"MinFreeDiskDecimalUnit", "min_free_disk_bytes: 3GB",
                     [](Options& o) { o.min_free_disk_bytes = 3'000'000'000; }},
        AcceptedCase{"WriteBuffer16MiB", "write_buffer_bytes: 16MiB", [](Options& o) { o.write_buffer_bytes = 16u << 20; }},
        AcceptedCase{"WriteBuffer64GiB", "write_buffer_bytes: 64GiB",
                     [](Options& o) { o.write_buffer_bytes = uint64_t{64} << 30; }},
        AcceptedCase{"ShutdownTimeoutZero", "shutdown_timeout: 0s",
                     [](Options& o) { o.shutdown_timeout = std::chrono::nanoseconds(0); }},
        AcceptedCase{"ShutdownTimeout10m", "shutdown_timeout: 10m", [](Options& o) { o.shutdown_timeout = minutes(10); }},
        AcceptedCase{"ShutdownTimeoutFraction", "shutdown_timeout: 1.5s",
                     [](Options& o) { o.shutdown_timeout = milliseconds(1500); }},
        AcceptedCase{"LawnMaxBuckets1", "lawn_max_buckets: 1", [](Options& o) { o.lawn_max_buckets = 1; }},
        AcceptedCase{"LawnMaxBuckets65535", "lawn_max_buckets: 65535", [](Options& o) { o.lawn_max_buckets = 65535; }},
        AcceptedCase{"LawnPromoteAfter1", "lawn_promote_after: 1", [](Options& o) { o.lawn_promote_after = 1; }},
        AcceptedCase{"LawnPromoteAfter1000", "lawn_promote_after: 1000",
                     [](Options& o) { o.lawn_promote_after = 1000; }},
        AcceptedCase{"ListenIpv6", "listen: \"[::]:7070\"", [](Options& o) { o.listen = "[::]:7070"; }},
        AcceptedCase{"ListenHostNamePort0", "listen: localhost:0", [](Options& o) { o.listen = "localhost:0"; }},
        AcceptedCase{"ListenPort65535", "listen: 0.0.0.0:65535", [](Options& o) { o.listen = "0.0.0.0:65535"; }},
        AcceptedCase{"MetricsListenEmptyDisables", "metrics_listen: \"\"", [](Options& o) { o.metrics_listen = ""; }},
        AcceptedCase{"QuotedNumber", "shards: \"4\"", [](Options& o) { o.shards = 4; }}),
    AcceptedName);

}  // namespace
}  // namespace lawn
