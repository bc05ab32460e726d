#include "tests/security/security_fixture.h"

#include <openssl/sha.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"

namespace lawn::testing {

std::string Sha256Hex(const std::string& token) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : digest) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 15]);
  }
  return hex;
}

std::string MakeCerts(const std::string& dir) {
  const std::string command = std::string(LAWN_MAKE_CERTS) + " '" + dir + "'";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return dir;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::shared_ptr<grpc::ChannelCredentials> TlsCredentials(const std::string& ca_file, const std::string& cert_file,
                                                         const std::string& key_file) {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = ReadText(ca_file);
  if (!cert_file.empty()) {
    options.pem_cert_chain = ReadText(cert_file);
    options.pem_private_key = ReadText(key_file);
  }
  return grpc::SslCredentials(options);
}

std::unique_ptr<grpc::ClientContext> Context(const std::string& token, std::chrono::milliseconds deadline) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + deadline);
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
  return context;
}

grpc::StatusCode HealthCall(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  return stub->Check(&context, request, &response).error_code();
}

}  // namespace lawn::testing
