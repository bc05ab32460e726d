"""How a client reaches lawnd: TLS settings, the bearer token, and the channel options both clients use.

The security model is lawnd's (README, Security): TLS with gRPC's own credentials, optionally mutual TLS with
a client certificate, and `authorization: Bearer <token>` metadata on every call, Subscribe streams included.
The token goes as per-call metadata, as the C++ client sends it, not as gRPC call credentials: gRPC drops
call credentials on plaintext channels, and lawnd accepts tokens on plaintext loopback listeners too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple, Union

import grpc

# Largest message sent or received; lawnd's own default max_message_bytes, and above the ~1 MiB of a batched
# Subscribe response.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class TLS:
    """TLS settings of the channel to lawnd. Each PEM may be given as contents (*_pem) or as a file (*_file).

    With no CA, lawnd's certificate is checked against gRPC's default roots. cert and key go together, for
    lawnd's tls.client_ca_file (mutual TLS). server_name is the name lawnd's certificate must carry when the
    address names the host differently (e.g. an IP).
    """

    ca_file: Optional[Union[str, Path]] = None
    cert_file: Optional[Union[str, Path]] = None
    key_file: Optional[Union[str, Path]] = None
    server_name: Optional[str] = None
    ca_pem: Optional[bytes] = None
    cert_pem: Optional[bytes] = None
    key_pem: Optional[bytes] = None

    def credentials(self) -> grpc.ChannelCredentials:
        """Reads the files; raises ValueError for a certificate without its key or a file without PEM."""
        ca = self.ca_pem or _read_pem(self.ca_file)
        cert = self.cert_pem or _read_pem(self.cert_file)
        key = self.key_pem or _read_pem(self.key_file)
        if (cert is None) != (key is None):
            raise ValueError("TLS: a client certificate needs its key and a key its certificate")
        return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)


def _read_pem(path: Optional[Union[str, Path]]) -> Optional[bytes]:
    if path is None:
        return None
    data = Path(path).read_bytes()
    if b"-----BEGIN " not in data:
        raise ValueError(f"TLS: {path} holds no PEM block")  # Never quote the contents: it may be a key.
    return data


def check_token(token: Optional[str]) -> None:
    """Raises ValueError unless the token can travel as an HTTP/2 header value (visible ASCII only)."""
    if not token:
        return
    for i, ch in enumerate(token):
        if not "\x21" <= ch <= "\x7e":
            raise ValueError(f"token: byte {i} is not visible ASCII")  # The token itself is a secret.


def call_metadata(token: Optional[str]) -> Optional[Tuple[Tuple[str, str], ...]]:
    return (("authorization", "Bearer " + token),) if token else None


def channel_options(tls: Optional[TLS]) -> List[Tuple[str, object]]:
    options: List[Tuple[str, object]] = [
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        # Reconnect soon after lawnd comes back (gRPC's default backoff grows to 2 minutes); the
        # subscription's own backoff paces its retries.
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 5000),
        # Notice a silently dead connection (no RST, e.g. a vanished host) under an idle Subscribe stream.
        # lawnd disconnects clients that ping more often than every 10 s (grpc_keepalive_min_time).
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_timeout_ms", 10_000),
    ]
    if tls is not None and tls.server_name:
        options.append(("grpc.ssl_target_name_override", tls.server_name))
    return options


def resolve_tls(tls: Union[TLS, bool, None]) -> Optional[TLS]:
    """`tls=True` means TLS with the default roots; False or None, plaintext."""
    if tls is True:
        return TLS()
    if tls is False or tls is None:
        return None
    if not isinstance(tls, TLS):
        raise TypeError(f"tls must be a lawn.TLS, True or None, not {type(tls).__name__}")
    return tls
