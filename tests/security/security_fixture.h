// What the security tests share: throw-away certificates, a tokens file of one identity per permission, and
// calls that carry a bearer token.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "lawn/v1/timer.grpc.pb.h"
#include "tests/integration/lawnd_process.h"

namespace lawn::testing {

// Hex SHA-256 of `token`, as the tokens file wants it.
std::string Sha256Hex(const std::string& token);

// Makes the certificates of tests/testing/make_certs.sh in `dir`; returns `dir`.
std::string MakeCerts(const std::string& dir);

std::string ReadText(const std::string& path);

// TLS channel credentials trusting `ca_file`, with a client certificate if `cert_file` is not empty.
std::shared_ptr<grpc::ChannelCredentials> TlsCredentials(const std::string& ca_file, const std::string& cert_file = "",
                                                         const std::string& key_file = "");

// A client context with a 5 s deadline and, unless `token` is empty, `authorization: Bearer <token>`.
std::unique_ptr<grpc::ClientContext> Context(const std::string& token,
                                             std::chrono::milliseconds deadline = std::chrono::seconds(5));

// grpc.health.v1 Check of service "" on `channel`: the status code of the call.
grpc::StatusCode HealthCall(const std::shared_ptr<grpc::Channel>& channel);

}  // namespace lawn::testing
