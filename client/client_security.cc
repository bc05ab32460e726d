#include "client/client_security.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "client/cat.h"

namespace lawn {
namespace {

using internal::Cat;

// The whole file at `path`, or the errno's status naming the file.
absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    const int error = errno;
    return absl::Status(absl::ErrnoToStatusCode(error),
                        Cat("cannot open ", path, ": ", std::strerror(error)));
  }
  std::string contents;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) contents.append(buffer, n);
  const int error =
      std::ferror(file) ? errno : 0;  // EISDIR for a directory: fopen accepts it, read does not.
  std::fclose(file);
  if (error != 0) {
    return absl::Status(absl::ErrnoToStatusCode(error),
                        Cat("cannot read ", path, ": ", std::strerror(error)));
  }
  return contents;
}

bool HasPemBlock(std::string_view text) { return text.find("-----BEGIN ") != std::string_view::npos; }

absl::Status NoPemError(std::string_view what) {
  return absl::InvalidArgumentError(
      Cat(what, ": no PEM block (-----BEGIN ...) found; PEM is required, not DER"));
}

// `pem` (a part of ClientTls) is empty or holds a PEM block; `what` names it in the message.
absl::Status CheckPem(std::string_view pem, std::string_view what) {
  return pem.empty() || HasPemBlock(pem) ? absl::OkStatus() : NoPemError(what);
}

}  // namespace

absl::StatusOr<ClientTls> LoadClientTls(const std::string& ca_file, const std::string& cert_file,
                                        const std::string& key_file, std::string server_name) {
  if (cert_file.empty() != key_file.empty()) {
    return absl::InvalidArgumentError(cert_file.empty()
                                          ? Cat("a client key (", key_file, ") needs its certificate too")
                                          : Cat("a client certificate (", cert_file, ") needs its key too"));
  }
  ClientTls tls;
  tls.server_name = std::move(server_name);
  const std::pair<const std::string*, std::string*> parts[] = {
      {&ca_file, &tls.ca_pem}, {&cert_file, &tls.cert_pem}, {&key_file, &tls.key_pem}};
  for (const auto& [path, pem] : parts) {
    if (path->empty()) continue;
    absl::StatusOr<std::string> contents = ReadFile(*path);
    if (!contents.ok()) return contents.status();
    if (!HasPemBlock(*contents)) return NoPemError(*path);  // Also an empty file: never "no CA" by accident.
    *pem = *std::move(contents);
  }
  return tls;
}

absl::Status ValidateClientTls(const ClientTls& tls) {
  if (tls.cert_pem.empty() != tls.key_pem.empty()) {
    return absl::InvalidArgumentError(tls.cert_pem.empty()
                                          ? "TLS: a client key needs its certificate (cert_pem) too"
                                          : "TLS: a client certificate needs its key (key_pem) too");
  }
  if (absl::Status s = CheckPem(tls.ca_pem, "TLS ca_pem"); !s.ok()) return s;
  if (absl::Status s = CheckPem(tls.cert_pem, "TLS cert_pem"); !s.ok()) return s;
  return CheckPem(tls.key_pem, "TLS key_pem");
}

absl::Status ValidateToken(std::string_view token) {
  for (size_t i = 0; i < token.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    if (c < 0x21 || c > 0x7e) {
      // The byte's value, not the token: the message may end up in logs.
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02x", c);
      return absl::InvalidArgumentError(Cat("token: byte ", i, " is ", hex,
                                            "; a token is visible ASCII only (0x21..0x7e: no spaces, no "
                                            "line breaks)"));
    }
  }
  return absl::OkStatus();
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsFor(const std::optional<ClientTls>& tls) {
  if (!tls.has_value()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = tls->ca_pem;  // Empty: gRPC's default roots.
  ssl.pem_cert_chain = tls->cert_pem;
  ssl.pem_private_key = tls->key_pem;
  return grpc::SslCredentials(ssl);
}

void AddBearerToken(std::string_view token, grpc::ClientContext& context) {
  if (token.empty()) return;
  context.AddMetadata(std::string(kAuthorizationKey), Cat(kBearerPrefix, token));
}

}  // namespace lawn
