package lawn

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/protobuf/proto"
)

// codec marshals lawn's messages with the protobuf API v2 (google.golang.org/protobuf), which their stubs
// are generated for. Debian 12's gRPC (1.33) marshals with github.com/golang/protobuf 1.3, which predates
// API v2 and cannot encode its oneofs; forcing this codec on the client's connection (not registering it
// globally) fixes that without touching anything else in the program. Messages of API v1 (say, the health
// stubs that Debian's gRPC ships, used on Client.Conn) go to gRPC's own codec.
type codec struct{ fallback encoding.Codec }

func newCodec() codec { return codec{fallback: encoding.GetCodec("proto")} }

func (c codec) Marshal(v interface{}) ([]byte, error) {
	if m, ok := v.(proto.Message); ok {
		return proto.Marshal(m)
	}
	if c.fallback == nil {
		return nil, fmt.Errorf("lawn: cannot marshal %T", v)
	}
	return c.fallback.Marshal(v)
}

func (c codec) Unmarshal(data []byte, v interface{}) error {
	if m, ok := v.(proto.Message); ok {
		return proto.Unmarshal(data, m)
	}
	if c.fallback == nil {
		return fmt.Errorf("lawn: cannot unmarshal into %T", v)
	}
	return c.fallback.Unmarshal(data, v)
}

// Name is the content subtype on the wire: application/grpc+proto, what lawnd expects.
func (codec) Name() string { return "proto" }
