// How a client of lawnd proves who it is and protects the connection: TLS settings (ClientTls), their
// loading from PEM files, the checks applied to them and to bearer tokens, and the per-call `authorization`
// metadata.
//
// The token travels as call metadata added to each ClientContext, not as gRPC call credentials: gRPC drops
// call credentials on insecure channels, and lawnd accepts tokens on plaintext listeners too (loopback use).
//
// Thread-safety: pure functions, except that LoadClientTls reads files.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"

namespace lawn {

// TLS settings of a channel to lawnd: PEM contents, not paths (LoadClientTls reads them from files).
struct ClientTls {
  // Root certificates lawnd's certificate must chain to. Empty: gRPC's default roots
  // ($GRPC_DEFAULT_SSL_ROOTS_FILE_PATH, else the system's / gRPC's bundled set).
  std::string ca_pem;
  // Client certificate chain and its private key, for lawnd's tls.client_ca_file (mutual TLS). Both or
  // neither.
  std::string cert_pem;
  std::string key_pem;
  // The name lawnd's certificate is checked against instead of the target's host (e.g. connecting by IP to a
  // certificate issued for a DNS name). Empty: the target's host.
  std::string server_name;
};

// The metadata key and value prefix of a bearer token (issue 10; lawnd's auth.tokens_file).
inline constexpr std::string_view kAuthorizationKey = "authorization";
inline constexpr std::string_view kBearerPrefix = "Bearer ";

// Reads the PEM files of a ClientTls; an empty path leaves that part empty. INVALID_ARGUMENT when exactly one
// of cert_file and key_file is given or a file holds no PEM block; a file that cannot be read gives the
// errno's code (NOT_FOUND, PERMISSION_DENIED, ...). Every message names the file; none quotes its contents.
absl::StatusOr<ClientTls> LoadClientTls(const std::string& ca_file, const std::string& cert_file,
                                        const std::string& key_file, std::string server_name = {});

// OK, or INVALID_ARGUMENT when `tls` cannot make a channel: a certificate without its key or a key without
// its certificate, or a non-empty part that holds no PEM block (e.g. a DER file).
absl::Status ValidateClientTls(const ClientTls& tls);

// OK, or INVALID_ARGUMENT when `token` cannot travel as an HTTP/2 header value after "Bearer ": only visible
// ASCII (0x21..0x7e) is allowed. An empty token means "no token" and is valid. The message gives the offset
// of the first bad byte and never the token itself.
absl::Status ValidateToken(std::string_view token);

// The channel credentials for `tls`: SSL when set, insecure otherwise. REQUIRES:
// ValidateClientTls(*tls).ok().
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsFor(const std::optional<ClientTls>& tls);

// Adds `authorization: Bearer <token>` to `context`; nothing for an empty token. Call before the call
// starts. REQUIRES: ValidateToken(token).ok().
void AddBearerToken(std::string_view token, grpc::ClientContext& context);

}  // namespace lawn
