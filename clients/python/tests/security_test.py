#!/usr/bin/python3
"""lawn.Client and subscriptions against a lawnd with TLS and a tokens file, and with mutual TLS.

Certificates come from tests/testing/make_certs.sh (openssl, at test time): server.crt is for 127.0.0.1 and
localhost, client.crt for CN billing-client.
"""

import hashlib
import os
import subprocess

import support
from support import LawndTestCase, take

import lawn

WRITER_TOKEN = "py-writer-token-0123456789"
READER_TOKEN = "py-reader-token-9876543210"


def make_certs(tmp: str) -> str:
    certs = os.path.join(tmp, "certs")
    subprocess.run(["bash", support.ARGS.make_certs, certs], check=True, timeout=60,
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return certs


def sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenTest(LawndTestCase):
    """TLS without client certificates; a bearer token decides who may do what."""

    @classmethod
    def lawnd_args(cls):
        cls.certs = make_certs(cls.tmp)
        tokens = os.path.join(cls.tmp, "tokens.yaml")
        with open(tokens, "w") as f:
            f.write(f"""tokens:
  - name: py-writer
    sha256: {sha256(WRITER_TOKEN)}
    grants:
      - namespaces: ["py-sec", "py-sec-*"]
        permissions: [start, delete, read, subscribe]
  - name: py-reader
    sha256: {sha256(READER_TOKEN)}
    grants:
      - namespaces: ["py-sec"]
        permissions: [read]
""")
        return ["--tls-cert-file", os.path.join(cls.certs, "server.crt"),
                "--tls-key-file", os.path.join(cls.certs, "server.key"), "--auth-tokens-file", tokens]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        with lawn.Client(cls.lawnd.address, token=WRITER_TOKEN,
                         tls=lawn.TLS(ca_file=os.path.join(cls.certs, "ca.crt"))) as client:
            support.wait_serving(client, "py-sec")

    def client(self, token=None, **tls_args) -> lawn.Client:
        tls = lawn.TLS(ca_file=os.path.join(self.certs, "ca.crt"), **tls_args)
        client = lawn.Client(self.lawnd.address, token=token, tls=tls)
        self.addCleanup(client.close)
        return client

    def test_a_granted_token_starts_reads_and_subscribes_over_tls(self):
        writer = self.client(WRITER_TOKEN)
        with writer.subscribe("py-sec-sub") as sub:
            writer.start("py-sec-sub", "fires", ttl=0.1, payload=b"secret")
            exp = take(sub, 1)[0]
            self.assertEqual((exp.timer.id, exp.timer.payload), (b"fires", b"secret"))
        t = writer.start("py-sec", "granted", ttl=3600)
        self.assertEqual(self.client(READER_TOKEN).get("py-sec", "granted").deadline, t.deadline)

    def test_no_token_or_a_wrong_token_is_unauthenticated(self):
        with self.assertRaises(lawn.Unauthenticated):
            self.client().start("py-sec", "no-token", ttl=60)
        with self.assertRaises(lawn.Unauthenticated):
            self.client("not-a-known-token").start("py-sec", "bad-token", ttl=60)
        with self.client("not-a-known-token").subscribe("py-sec") as sub:
            with self.assertRaises(lawn.Unauthenticated):
                next(sub)

    def test_a_token_without_the_permission_is_permission_denied_also_for_subscribe(self):
        reader = self.client(READER_TOKEN)
        with self.assertRaises(lawn.PermissionDenied):
            reader.start("py-sec", "denied", ttl=60)
        with reader.subscribe("py-sec") as sub:
            with self.assertRaises(lawn.PermissionDenied):
                next(sub)

    def test_server_name_checks_the_certificate_against_another_name(self):
        self.client(WRITER_TOKEN, server_name="localhost").start("py-sec", "by-name", ttl=60)
        with self.assertRaises(lawn.Unavailable):
            self.client(WRITER_TOKEN, server_name="not-in-the-cert").start("py-sec", "bad-name", ttl=60)

    def test_plaintext_to_the_tls_port_is_unavailable(self):
        with lawn.Client(self.lawnd.address, token=WRITER_TOKEN) as plain:
            with self.assertRaises(lawn.Unavailable):
                plain.start("py-sec", "plain", ttl=60)

    def test_a_token_that_cannot_be_a_header_is_refused_before_any_call(self):
        with self.assertRaises(ValueError):
            lawn.Client(self.lawnd.address, token="has space")


class MutualTlsTest(LawndTestCase):
    """tls.client_ca_file: a client certificate is required, and its subject can be the identity."""

    @classmethod
    def lawnd_args(cls):
        cls.certs = make_certs(cls.tmp)
        tokens = os.path.join(cls.tmp, "tokens.yaml")
        with open(tokens, "w") as f:
            f.write("""tokens:
  - name: py-cert
    subject: billing-client
    grants:
      - namespaces: ["py-mtls"]
        permissions: [start, read]
""")
        return ["--tls-cert-file", os.path.join(cls.certs, "server.crt"),
                "--tls-key-file", os.path.join(cls.certs, "server.key"),
                "--tls-client-ca-file", os.path.join(cls.certs, "ca.crt"), "--auth-tokens-file", tokens]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        c = cls.certs
        cls.tls = lawn.TLS(ca_file=os.path.join(c, "ca.crt"), cert_file=os.path.join(c, "client.crt"),
                           key_file=os.path.join(c, "client.key"))
        with lawn.Client(cls.lawnd.address, tls=cls.tls) as client:
            support.wait_serving(client, "py-mtls")

    def test_a_client_certificate_is_the_identity_without_a_token(self):
        with lawn.Client(self.lawnd.address, tls=self.tls) as client:
            self.assertEqual(client.start("py-mtls", "by-cert", ttl=60).id, b"by-cert")

    def test_without_a_client_certificate_the_handshake_fails(self):
        with lawn.Client(self.lawnd.address, tls=lawn.TLS(ca_file=os.path.join(self.certs, "ca.crt"))) as c:
            with self.assertRaises(lawn.Unavailable):
                c.start("py-mtls", "no-cert", ttl=60)

    def test_a_certificate_without_its_key_is_refused(self):
        with self.assertRaises(ValueError):
            lawn.Client(self.lawnd.address, tls=lawn.TLS(cert_file=os.path.join(self.certs, "client.crt")))


if __name__ == "__main__":
    support.main()
