#include "server/raw_call.h"

#include <cstring>
#include <string>
#include <vector>

#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/proto_buffer_reader.h"

namespace lawn {

bool ParseMessage(const grpc::ByteBuffer& raw, google::protobuf::Message* msg) {
  if (!raw.Valid()) return false;
  // ProtoBufferReader only reads the buffer (through a grpc_byte_buffer_reader); it takes a non-const pointer
  // because the same type backs the typed path, which hands over buffers it owns.
  grpc::ProtoBufferReader reader(const_cast<grpc::ByteBuffer*>(&raw));
  return reader.status().ok() && msg->ParseFromZeroCopyStream(&reader);
}

namespace {

grpc::Status NoMessage(std::string_view method, std::string_view type) {
  return grpc::Status(
      grpc::StatusCode::INVALID_ARGUMENT,
      std::string(method) + ": the call carried no request message; send one " + std::string(type));
}

}  // namespace

grpc::Status NotAValidRequest(std::string_view method, std::string_view type) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      std::string(method) + ": the request is not a valid " + std::string(type) +
                          " message (its bytes do not parse)");
}

grpc::Status ParseRequest(const grpc::ByteBuffer* raw, std::string_view method,
                          google::protobuf::Message* msg) {
  const std::string& type = msg->GetDescriptor()->full_name();
  // A unary call that half-closes without a message reaches the handler with an empty (invalid) buffer.
  if (raw == nullptr || !raw->Valid()) return NoMessage(method, type);
  if (!ParseMessage(*raw, msg)) return NotAValidRequest(method, type);
  return grpc::Status::OK;
}

grpc::Status RequestBytes(const grpc::ByteBuffer* raw, std::string_view method, std::string_view type,
                          google::protobuf::Arena* arena, std::string_view* out) {
  if (raw == nullptr || !raw->Valid()) return NoMessage(method, type);
  std::vector<grpc::Slice> slices;
  if (!raw->Dump(&slices).ok()) return NotAValidRequest(method, type);
  // Copied (usually one slice): the call's views into it must outlive gRPC's buffer.
  size_t size = 0;
  for (const grpc::Slice& slice : slices) size += slice.size();
  char* copy = google::protobuf::Arena::CreateArray<char>(arena, size);
  size_t at = 0;
  for (const grpc::Slice& slice : slices) {
    if (slice.size() == 0) continue;
    std::memcpy(copy + at, slice.begin(), slice.size());
    at += slice.size();
  }
  *out = std::string_view(copy, size);
  return grpc::Status::OK;
}

google::protobuf::ArenaOptions CallArenaOptions(char* block, size_t size) {
  google::protobuf::ArenaOptions options;
  options.initial_block = block;
  options.initial_block_size = size;
  options.start_block_size = 4096;
  options.max_block_size = 64 * 1024;
  return options;
}

grpc::Status SerializeMessage(const google::protobuf::Message& msg, grpc::ByteBuffer* out) {
  // gRPC's ProtoBufferWriter (used for all but tiny messages) asserts that it starts from an empty buffer.
  out->Clear();
  bool own_buffer;  // Always set true by the protobuf traits; only gRPC's own send path reads it.
  return grpc::SerializationTraits<google::protobuf::Message>::Serialize(msg, out, &own_buffer);
}

void UnaryCall::Reply(const grpc::Status& status) {
  if (status.ok()) {
    if (grpc::Status serialized = SerializeMessage(response_message(), out_); !serialized.ok()) {
      Finish(serialized);
      return;
    }
  }
  Finish(status);
}

}  // namespace lawn
