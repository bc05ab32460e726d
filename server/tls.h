// The gRPC server credentials of lawnd's main port: plaintext, TLS, or mutual TLS (config section tls:).
//
// TLS uses gRPC's own TLS credentials with a FileWatcherCertificateProvider, which re-reads the certificate,
// key and client CA files every kRefreshSeconds and switches to a new pair once it is consistent, so
// certificates rotate without a restart; connections already open keep the certificate they started with.
// The files are checked with OpenSSL before the server starts, so a missing file, a key that does not match
// the certificate or a CA file without a certificate stops lawnd with a clear message instead of failing
// every handshake later.
//
// Thread-safety: a pure function of the options and the files.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "config/options.h"
#include "grpcpp/security/server_credentials.h"

namespace lawn {

inline constexpr unsigned kTlsRefreshSeconds = 1;

// Plaintext if options.tls_cert_file is empty. Errors: FAILED_PRECONDITION naming the file and the problem.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const Options& options);

}  // namespace lawn
