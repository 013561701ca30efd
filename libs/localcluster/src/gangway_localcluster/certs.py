"""Certificates for a local control plane and for local webhook serving.

A CA per purpose, as envtest does: one signs the API server's serving certificate, one
signs client certificates (CN = user, O = groups), and a key pair signs service-account
tokens. ECDSA P-256 keeps generation instant.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=7)


@dataclass(frozen=True)
class KeyPair:
    cert_pem: bytes
    key_pem: bytes

    def write(self, directory: Path, stem: str) -> tuple[Path, Path]:
        cert, key = directory / f"{stem}.crt", directory / f"{stem}.key"
        cert.write_bytes(self.cert_pem)
        key.write_bytes(self.key_pem)
        key.chmod(0o600)
        return cert, key


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _name(cn: str, orgs: tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    return x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, cn)])


class CertificateAuthority:
    def __init__(self, common_name: str, validity: datetime.timedelta = _VALIDITY) -> None:
        self._validity = validity
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self.cert: x509.Certificate = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(_name(common_name))
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + validity)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )

    @classmethod
    def load(cls, cert_pem: bytes, key_pem: bytes) -> CertificateAuthority:
        """A CA kept from before (its certificate, and its key as :attr:`key_pem` gave it).
        Raises ValueError when they do not load or are not one pair."""
        key = serialization.load_pem_private_key(key_pem, password=None)
        cert = x509.load_pem_x509_certificate(cert_pem)
        if not isinstance(key, ec.EllipticCurvePrivateKey) or key.public_key() != cert.public_key():
            raise ValueError("the CA's key is not the key of its certificate")
        ca = cls.__new__(cls)
        ca._validity, ca._key, ca.cert = _VALIDITY, key, cert
        return ca

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return _key_pem(self._key)

    def issue(
        self,
        common_name: str,
        *,
        orgs: tuple[str, ...] = (),
        hosts: tuple[str, ...] = (),
        server: bool = False,
        validity: datetime.timedelta | None = None,
    ) -> KeyPair:
        """A leaf certificate: serving (with ``hosts`` as SANs) or client (CN user, O groups),
        valid as long as the CA was made to be unless ``validity`` says otherwise."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, orgs))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + (validity or self._validity))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if hosts:
            sans: list[x509.GeneralName] = []
            for host in hosts:
                try:
                    sans.append(x509.IPAddress(ipaddress.ip_address(host)))
                except ValueError:
                    sans.append(x509.DNSName(host))
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def signing_key_pair() -> KeyPair:
    """Service-account token signer: the public half as 'cert_pem' (a PEM public key)."""
    key = ec.generate_private_key(ec.SECP256R1())
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return KeyPair(public, _key_pem(key))


@dataclass(frozen=True)
class ServingFiles:
    """A CA and a serving certificate it signed, on disk: what a local webhook needs."""

    ca: Path
    cert: Path
    key: Path


def write_serving_certificate(
    directory: Path, hosts: tuple[str, ...], common_name: str = "gangway-admission"
) -> ServingFiles:
    """A fresh CA (``ca.crt``) and a serving pair (``tls.crt``, ``tls.key``) for ``hosts``;
    the CA's key is not kept, so nothing else can be signed with it."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = CertificateAuthority(f"{common_name}-ca")
    ca_path = directory / "ca.crt"
    ca_path.write_bytes(ca.cert_pem)
    cert, key = ca.issue(common_name, hosts=hosts, server=True).write(directory, "tls")
    return ServingFiles(ca=ca_path, cert=cert, key=key)
