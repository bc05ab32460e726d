// The gRPC server credentials of lawnd's main port: plaintext, TLS, or mutual TLS (config section tls:).
//
// TLS uses gRPC's own TLS credentials with a FileWatcherCertificateProvider, which re-reads its files every
// kTlsRefreshSeconds, so certificates rotate without a restart; connections already open keep the certificate
// they started with. The provider does not read the operator's files (tls.cert_file, ...) but the copies a
// TlsFileGuard keeps in <data_dir>/tls-active, which hold only files checked with OpenSSL: a broken file (a
// key that does not match the certificate, garbage, a missing file) stops lawnd at start with a clear message
// and, later, is logged and ignored while the previous certificate keeps serving (server/tls_files.h).
//
// Thread-safety: called once, from the thread that starts the server.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "config/options.h"
#include "grpcpp/security/server_credentials.h"
#include "server/tls_files.h"

namespace lawn {

class Metrics;

inline constexpr unsigned kTlsRefreshSeconds = 1;

// Plaintext if options.tls_cert_file is empty. Otherwise starts a TlsFileGuard and stores it in `*guard`;
// the guard must outlive the server built with the credentials. Errors: FAILED_PRECONDITION naming the file
// and the problem, or the directory that cannot be made.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const Options& options, Metrics& metrics,
                                                                               std::unique_ptr<TlsFileGuard>* guard);

}  // namespace lawn
