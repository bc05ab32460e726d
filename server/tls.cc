#include "server/tls.h"

#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace lawn {

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const Options& options, Metrics& metrics,
                                                                               std::unique_ptr<TlsFileGuard>* guard) {
  if (options.tls_cert_file.empty()) return grpc::InsecureServerCredentials();
  absl::StatusOr<std::unique_ptr<TlsFileGuard>> files = TlsFileGuard::Create(options, metrics);
  if (!files.ok()) return files.status();
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      (*files)->key_path(), (*files)->cert_path(), (*files)->client_ca_path(), kTlsRefreshSeconds);
  grpc::experimental::TlsServerCredentialsOptions tls(provider);
  tls.watch_identity_key_cert_pairs();
  if (options.tls_client_ca_file.empty()) {
    tls.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  } else {
    tls.watch_root_certs();
    tls.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  }
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::experimental::TlsServerCredentials(tls);
  if (credentials == nullptr) return absl::FailedPreconditionError("tls: gRPC refused the TLS options");
  *guard = std::move(*files);
  return credentials;
}

}  // namespace lawn
