package lawn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// Option configures Dial.
type Option func(*options) error

type options struct {
	token       string
	tls         *TLS
	timeout     time.Duration
	maxMessage  int
	dialOptions []grpc.DialOption
}

// TLS says how to check lawnd's certificate and, for mutual TLS, which certificate to present. Files and
// PEM contents are alternatives; an empty TLS{} checks lawnd against the system's roots.
type TLS struct {
	CAFile, CertFile, KeyFile string
	CAPEM, CertPEM, KeyPEM    []byte
	// ServerName is the name lawnd's certificate must carry when the address names the host differently
	// (an IP address, say).
	ServerName string
}

// WithToken sends `authorization: Bearer <token>` on every call and stream (lawnd's auth.tokens_file).
func WithToken(token string) Option {
	return func(o *options) error {
		if token == "" || strings.ContainsAny(token, " \t\r\n") {
			return invalid("a token is a non-empty string without spaces or line breaks")
		}
		o.token = token
		return nil
	}
}

// WithTLS connects over TLS (lawnd's tls.* keys) instead of plaintext.
func WithTLS(t TLS) Option {
	return func(o *options) error {
		o.tls = &t
		return nil
	}
}

// WithTimeout is the deadline of a unary call whose context has none (default 10 s; 0: none).
func WithTimeout(d time.Duration) Option {
	return func(o *options) error {
		o.timeout = d
		return nil
	}
}

// WithMaxMessageBytes bounds the size of a message received (default 64 MiB, above lawnd's largest answer:
// a page of 1000 timers with large payloads).
func WithMaxMessageBytes(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return invalid("max message bytes %d: give a positive size", n)
		}
		o.maxMessage = n
		return nil
	}
}

// WithDialOptions adds gRPC dial options (keepalive, interceptors, a custom dialer, ...).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) error {
		o.dialOptions = append(o.dialOptions, opts...)
		return nil
	}
}

func (o *options) grpcDialOptions() ([]grpc.DialOption, error) {
	var out []grpc.DialOption
	if o.tls == nil {
		out = append(out, grpc.WithInsecure())
	} else {
		cfg, err := o.tls.config()
		if err != nil {
			return nil, err
		}
		out = append(out, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	}
	if o.token != "" {
		out = append(out, grpc.WithPerRPCCredentials(bearer{"Bearer " + o.token}))
	}
	out = append(out, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(o.maxMessage), grpc.ForceCodec(newCodec())))
	return append(out, o.dialOptions...), nil
}

func (t *TLS) config() (*tls.Config, error) {
	ca, err := pemFrom(t.CAPEM, t.CAFile, "CA")
	if err != nil {
		return nil, err
	}
	cert, err := pemFrom(t.CertPEM, t.CertFile, "certificate")
	if err != nil {
		return nil, err
	}
	key, err := pemFrom(t.KeyPEM, t.KeyFile, "key")
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{ServerName: t.ServerName, MinVersion: tls.VersionTLS12}
	if ca != nil {
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(ca) {
			return nil, invalid("the TLS CA (%s) holds no PEM certificate", orPEM(t.CAFile))
		}
	}
	if (cert == nil) != (key == nil) {
		return nil, invalid("a client certificate and its key go together: set both or neither")
	}
	if cert != nil {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, invalid("the client certificate (%s) and key (%s) do not make a pair: %v",
				orPEM(t.CertFile), orPEM(t.KeyFile), err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

func pemFrom(contents []byte, file, what string) ([]byte, error) {
	if contents != nil && file != "" {
		return nil, invalid("the TLS %s is given both as a file and as PEM: choose one", what)
	}
	if file == "" {
		return contents, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, invalid("cannot read the TLS %s file: %v", what, err)
	}
	return b, nil
}

func orPEM(file string) string {
	if file == "" {
		return "PEM"
	}
	return file
}

// bearer is the token as per-call credentials. It does not insist on TLS: a lawnd on loopback may take
// tokens in plaintext, and lawnd, not the client, decides what it accepts.
type bearer struct{ value string }

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": b.value}, nil
}

func (bearer) RequireTransportSecurity() bool { return false }
