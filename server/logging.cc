#include "server/logging.h"

#include <memory>

#include "google/protobuf/stubs/logging.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace lawn {

namespace {

// %j: the message, escaped for a JSON string (spdlog's %v would let a quote or newline break the object).
class JsonEscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    static const char kHex[] = "0123456789abcdef";
    for (char c : std::string_view(msg.payload.data(), msg.payload.size())) {
      switch (c) {
        case '"': dest.append(std::string_view("\\\"")); break;
        case '\\': dest.append(std::string_view("\\\\")); break;
        case '\n': dest.append(std::string_view("\\n")); break;
        case '\r': dest.append(std::string_view("\\r")); break;
        case '\t': dest.append(std::string_view("\\t")); break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            const char esc[] = {'\\', 'u', '0', '0', kHex[(c >> 4) & 15], kHex[c & 15]};
            dest.append(esc, esc + sizeof(esc));
          } else {
            dest.push_back(c);
          }
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonEscapedMessage>(); }
};

// libprotobuf writes its log lines to stderr itself, outside spdlog: one ERROR line for every request with
// invalid UTF-8 in a string field, for example, which any client could use to flood the log in a format the
// log pipeline cannot parse. Such lines are about client input that is refused INVALID_ARGUMENT anyway, so
// they go to spdlog at debug. FATAL is kept loud: libprotobuf aborts right after it.
void RouteProtobufLog(google::protobuf::LogLevel level, const char* filename, int line,
                      const std::string& message) {
  if (level == google::protobuf::LOGLEVEL_FATAL) {
    spdlog::critical("libprotobuf {}:{}: {}", filename, line, message);
    return;
  }
  spdlog::debug("libprotobuf {}:{}: {}", filename, line, message);
}

}  // namespace

absl::Status SetupLogging(const std::string& level, const std::string& format) {
  auto logger = std::make_shared<spdlog::logger>("lawnd", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  std::unique_ptr<spdlog::pattern_formatter> formatter;
  if (format == "json") {
    formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<JsonEscapedMessage>('j').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","logger":"%n","thread":%t,"msg":"%j"})");
  } else if (format == "text") {
    formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%t] %v");
  } else {
    return absl::InvalidArgumentError("log_format: '" + format + "'; allowed text or json");
  }
  logger->set_formatter(std::move(formatter));
  const spdlog::level::level_enum lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") {
    return absl::InvalidArgumentError("log_level: '" + level + "'; allowed trace, debug, info, warn, error, critical, off");
  }
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
  google::protobuf::SetLogHandler(&RouteProtobufLog);  // Not thread-safe: hence before other threads start.
  return absl::OkStatus();
}

}  // namespace lawn
