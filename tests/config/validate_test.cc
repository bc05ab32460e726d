// Range checks: every key's bounds, each as one test case. A value just outside is rejected with a message
// naming the key and the allowed values; the bound itself is accepted.
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
  const char* message;  // Expected in the error; unused for accepted values.
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

class AcceptedValueTest : public ::testing::TestWithParam<RangeCase> {};

TEST_P(AcceptedValueTest, IsAccepted) {
  const absl::StatusOr<Options> options = LoadOptionsFromYaml(GetParam().yaml);
  EXPECT_TRUE(options.ok()) << options.status();
}

INSTANTIATE_TEST_SUITE_P(
    ConfigTest, AcceptedValueTest,
    ::testing::Values(RangeCase{"Shards1", "shards: 1", ""}, RangeCase{"Shards256", "shards: 256", ""},
                      RangeCase{"Tick1us", "tick: 1us", ""}, RangeCase{"Tick1s", "tick: 1s", ""},
                      RangeCase{"MaxPayloadZero", "max_payload_bytes: 0", ""},
                      RangeCase{"MaxPayload4MiB", "max_payload_bytes: 4MiB\nmax_message_bytes: 64MiB", ""},
                      RangeCase{"MaxPendingTimers1", "max_pending_timers: 1", ""},
                      RangeCase{"PerNamespaceEqualToGlobal",
                                "max_pending_timers: 9\nmax_pending_per_namespace: 9", ""},
                      RangeCase{"AckTimeout100ms", "ack_timeout: 100ms", ""},
                      RangeCase{"AckTimeout1h", "ack_timeout: 1h", ""},
                      RangeCase{"MaxInFlight1", "max_in_flight: 1", ""},
                      RangeCase{"MaxInFlight100000", "max_in_flight: 100000", ""},
                      RangeCase{"SyncInterval1ms", "sync_interval: 1ms", ""},
                      RangeCase{"SyncInterval10s", "sync_interval: 10s", ""},
                      RangeCase{"MaxMessage64KiB", "max_message_bytes: 64KiB\nmax_payload_bytes: 1KiB", ""},
                      RangeCase{"MaxMessage64MiB", "max_message_bytes: 64MiB", ""},
                      RangeCase{"MinFreeDiskZero", "min_free_disk_bytes: 0", ""},
                      RangeCase{"ShutdownTimeoutZero", "shutdown_timeout: 0s", ""},
                      RangeCase{"ShutdownTimeout10m", "shutdown_timeout: 10m", ""},
                      RangeCase{"LawnMaxBuckets1", "lawn_max_buckets: 1", ""},
                      RangeCase{"LawnMaxBuckets65535", "lawn_max_buckets: 65535", ""},
                      RangeCase{"LawnPromoteAfter1", "lawn_promote_after: 1", ""},
                      RangeCase{"LawnPromoteAfter1000", "lawn_promote_after: 1000", ""},
                      RangeCase{"ListenIpv6", "listen: \"[::]:7070\"", ""},
                      RangeCase{"ListenHostNamePort0", "listen: localhost:0", ""},
                      RangeCase{"ListenPort65535", "listen: 0.0.0.0:65535", ""},
                      RangeCase{"MetricsListenEmptyDisables", "metrics_listen: \"\"", ""},
                      RangeCase{"QuotedNumber", "shards: \"4\"", ""}),
    CaseName);

}  // namespace
}  // namespace lawn
