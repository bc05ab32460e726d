package lawn_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"lawn.dev/lawn"
)

const (
	writerToken = "go-writer-token-0123456789"
	readerToken = "go-reader-token-9876543210"
)

// makeCerts runs tests/testing/make_certs.sh ($LAWN_MAKE_CERTS): a CA, lawnd's certificate for 127.0.0.1
// and localhost, a client certificate for CN billing-client.
func makeCerts(t *testing.T) string {
	t.Helper()
	script := os.Getenv("LAWN_MAKE_CERTS")
	if script == "" {
		t.Fatal("set LAWN_MAKE_CERTS to tests/testing/make_certs.sh (ctest does)")
	}
	dir := filepath.Join(t.TempDir(), "certs")
	if out, err := exec.Command("bash", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("make_certs.sh: %v\n%s", err, out)
	}
	return dir
}

func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

func writeFile(t *testing.T, name, contents string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(contents), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTLSAndTokens(t *testing.T) {
	certs := makeCerts(t)
	tokens := writeFile(t, "tokens.yaml", `tokens:
  - name: go-writer
    sha256: `+tokenHash(writerToken)+`
    grants:
      - namespaces: ["go-sec", "go-sec-*"]
        permissions: [start, delete, read, subscribe]
  - name: go-reader
    sha256: `+tokenHash(readerToken)+`
    grants:
      - namespaces: ["go-sec"]
        permissions: [read]
`)
	d := startLawnd(t, "--tls-cert-file", filepath.Join(certs, "server.crt"),
		"--tls-key-file", filepath.Join(certs, "server.key"), "--auth-tokens-file", tokens)
	ca := lawn.TLS{CAFile: filepath.Join(certs, "ca.crt")}
	connect := func(opts ...lawn.Option) *lawn.Client {
		c, err := lawn.Dial(d.address(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	ctx := context.Background()
	writer := connect(lawn.WithTLS(ca), lawn.WithToken(writerToken))
	waitServing(t, writer, "go-sec")

	t.Run("a granted token starts, reads and subscribes over TLS", func(t *testing.T) {
		sub, err := writer.Subscribe(ctx, "go-sec-sub", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		if _, err := writer.Start(ctx, lawn.TimerSpec{Namespace: "go-sec-sub", ID: "fires", TTL: 100 * time.Millisecond,
			Payload: []byte("secret")}); err != nil {
			t.Fatal(err)
		}
		exp := take(t, sub, 1)[0]
		if exp.Timer.ID != "fires" || string(exp.Timer.Payload) != "secret" {
			t.Fatalf("%+v", exp)
		}
		exp.Ack()
		started, err := writer.Start(ctx, lawn.TimerSpec{Namespace: "go-sec", ID: "granted", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		got, err := connect(lawn.WithTLS(ca), lawn.WithToken(readerToken)).Get(ctx, "go-sec", "granted")
		if err != nil || !got.Deadline.Equal(started.Deadline) {
			t.Fatalf("the reader's Get: %+v, %v", got, err)
		}
	})

	t.Run("no token or an unknown token is unauthenticated, also for subscribe", func(t *testing.T) {
		for _, c := range []*lawn.Client{connect(lawn.WithTLS(ca)), connect(lawn.WithTLS(ca), lawn.WithToken("unknown-token"))} {
			if _, err := c.Start(ctx, lawn.TimerSpec{Namespace: "go-sec", ID: "x", TTL: time.Hour}); !errors.Is(err, lawn.ErrUnauthenticated) {
				t.Fatalf("start: %v", err)
			}
			sub, err := c.Subscribe(ctx, "go-sec", nil)
			if err != nil {
				t.Fatal(err)
			}
			waitEnded(t, sub, "subscribe without a valid token")
			if !errors.Is(sub.Err(), lawn.ErrUnauthenticated) {
				t.Fatalf("subscribe: %v", sub.Err())
			}
		}
	})

	t.Run("a token without the permission is denied, also for subscribe", func(t *testing.T) {
		reader := connect(lawn.WithTLS(ca), lawn.WithToken(readerToken))
		if _, err := reader.Start(ctx, lawn.TimerSpec{Namespace: "go-sec", ID: "x", TTL: time.Hour}); !errors.Is(err, lawn.ErrPermissionDenied) {
			t.Fatalf("start: %v", err)
		}
		sub, err := reader.Subscribe(ctx, "go-sec", nil)
		if err != nil {
			t.Fatal(err)
		}
		waitEnded(t, sub, "subscribe without the permission")
		if !errors.Is(sub.Err(), lawn.ErrPermissionDenied) {
			t.Fatalf("subscribe: %v", sub.Err())
		}
	})

	t.Run("the server name is checked; plaintext to the TLS port is unavailable", func(t *testing.T) {
		byName := connect(lawn.WithTLS(lawn.TLS{CAFile: ca.CAFile, ServerName: "localhost"}), lawn.WithToken(writerToken))
		if _, err := byName.Start(ctx, lawn.TimerSpec{Namespace: "go-sec", ID: "by-name", TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		wrongName := connect(lawn.WithTLS(lawn.TLS{CAFile: ca.CAFile, ServerName: "not-in-the-cert"}), lawn.WithToken(writerToken))
		if _, err := wrongName.Get(ctx, "go-sec", "by-name"); !errors.Is(err, lawn.ErrUnavailable) {
			t.Fatalf("wrong server name: %v", err)
		}
		if _, err := connect(lawn.WithToken(writerToken)).Get(ctx, "go-sec", "by-name"); !errors.Is(err, lawn.ErrUnavailable) {
			t.Fatalf("plaintext: %v", err)
		}
	})

	t.Run("TLS files that cannot work are refused by Dial", func(t *testing.T) {
		for name, tls := range map[string]lawn.TLS{
			"missing CA file":       {CAFile: filepath.Join(certs, "missing.crt")},
			"CA without PEM":        {CAPEM: []byte("not pem")},
			"certificate, no key":   {CertFile: filepath.Join(certs, "client.crt")},
			"key of another pair":   {CertFile: filepath.Join(certs, "client.crt"), KeyFile: filepath.Join(certs, "server.key")},
			"CA as file and as PEM": {CAFile: ca.CAFile, CAPEM: []byte("x")},
		} {
			if _, err := lawn.Dial(d.address(), lawn.WithTLS(tls)); !errors.Is(err, lawn.ErrInvalidArgument) {
				t.Errorf("%s: %v", name, err)
			}
		}
	})
}

func TestMutualTLSWithTheCertificateAsIdentity(t *testing.T) {
	certs := makeCerts(t)
	tokens := writeFile(t, "tokens.yaml", `tokens:
  - name: go-cert
    subject: billing-client
    grants:
      - namespaces: ["go-mtls"]
        permissions: [start, read]
`)
	d := startLawnd(t, "--tls-cert-file", filepath.Join(certs, "server.crt"),
		"--tls-key-file", filepath.Join(certs, "server.key"), "--tls-client-ca-file", filepath.Join(certs, "ca.crt"),
		"--auth-tokens-file", tokens)
	withCert := lawn.TLS{CAFile: filepath.Join(certs, "ca.crt"), CertFile: filepath.Join(certs, "client.crt"),
		KeyFile: filepath.Join(certs, "client.key")}
	c, err := lawn.Dial(d.address(), lawn.WithTLS(withCert))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitServing(t, c, "go-mtls")
	if got, err := c.Start(context.Background(), lawn.TimerSpec{Namespace: "go-mtls", ID: "by-cert", TTL: time.Hour}); err != nil || got.ID != "by-cert" {
		t.Fatalf("start with the client certificate: %+v, %v", got, err)
	}
	noCert, err := lawn.Dial(d.address(), lawn.WithTLS(lawn.TLS{CAFile: withCert.CAFile}))
	if err != nil {
		t.Fatal(err)
	}
	defer noCert.Close()
	if _, err := noCert.Get(context.Background(), "go-mtls", "by-cert"); !errors.Is(err, lawn.ErrUnavailable) {
		t.Fatalf("without a client certificate: %v", err)
	}
}
