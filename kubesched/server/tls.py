"""HTTPS for `serve`: kubectl and client-go send a bearer token only over TLS, so a server that
asks for one serves TLS too, with the operator's certificate or a self-signed one made at start
(written into the kubeconfig as the cluster's certificate authority, as kind and k3d do)."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALIDITY = datetime.timedelta(days=365)


@dataclass
class Certificate:
    cert_file: str
    key_file: str

    def pem(self) -> bytes:
        return Path(self.cert_file).read_bytes()

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context


def self_signed(host: str, directory: str | None = None) -> Certificate:
    """A certificate for `host`, 127.0.0.1 and localhost, signed by its own key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubesched")])
    names: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    try:
        address = ipaddress.ip_address(host)
        if str(address) != "127.0.0.1":
            names.append(x509.IPAddress(address))
    except ValueError:
        names.append(x509.DNSName(host))
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    folder = Path(directory or tempfile.mkdtemp(prefix="kubesched-tls-"))
    cert_file, key_file = folder / "serving.crt", folder / "serving.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.touch(mode=0o600)
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return Certificate(str(cert_file), str(key_file))
