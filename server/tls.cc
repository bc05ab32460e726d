#include "server/tls.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"
#include "spdlog/spdlog.h"

namespace lawn {

namespace {

struct BioCloser {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Closer {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyCloser {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Bio = std::unique_ptr<BIO, BioCloser>;
using Cert = std::unique_ptr<X509, X509Closer>;
using Key = std::unique_ptr<EVP_PKEY, KeyCloser>;

absl::Status Bad(const std::string& key, const std::string& path, const std::string& what) {
  return absl::FailedPreconditionError("config key '" + key + "' (" + path + "): " + what);
}

absl::StatusOr<Cert> ReadCert(const std::string& key, const std::string& path) {
  Bio bio(BIO_new_file(path.c_str(), "r"));
  if (bio == nullptr) return Bad(key, path, "cannot open the file");
  Cert cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) return Bad(key, path, "no PEM certificate in the file");
  return cert;
}

// The server certificate and key parse and belong together; the CA file holds a certificate.
absl::Status CheckFiles(const Options& options) {
  absl::StatusOr<Cert> cert = ReadCert("tls.cert_file", options.tls_cert_file);
  if (!cert.ok()) return cert.status();
  Bio bio(BIO_new_file(options.tls_key_file.c_str(), "r"));
  if (bio == nullptr) return Bad("tls.key_file", options.tls_key_file, "cannot open the file");
  Key key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) return Bad("tls.key_file", options.tls_key_file, "no PEM private key in the file");
  if (X509_check_private_key(cert->get(), key.get()) != 1) {
    return Bad("tls.key_file", options.tls_key_file, "the key does not match the certificate in " + options.tls_cert_file);
  }
  if (X509_cmp_current_time(X509_get0_notAfter(cert->get())) < 0) {
    spdlog::warn("tls: the certificate in {} has expired: clients will refuse it until it is replaced",
                 options.tls_cert_file);
  }
  if (!options.tls_client_ca_file.empty()) {
    if (absl::StatusOr<Cert> ca = ReadCert("tls.client_ca_file", options.tls_client_ca_file); !ca.ok()) {
      return ca.status();
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const Options& options) {
  if (options.tls_cert_file.empty()) return grpc::InsecureServerCredentials();
  if (absl::Status s = CheckFiles(options); !s.ok()) return s;
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      options.tls_key_file, options.tls_cert_file, options.tls_client_ca_file, kTlsRefreshSeconds);
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
  return credentials;
}

}  // namespace lawn
