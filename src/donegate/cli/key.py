"""``donegate key init|show|export``: the gate's Ed25519 signing key.

``init`` makes the key file (``$DONEGATE_HOME/signing.key``, 0600) when there is none and prints
its public half; ``show`` prints the key id, the fingerprint and the public key; ``export``
prints the public key alone (to hand to whoever verifies: ``donegate verify --public-key``, a
``$DONEGATE_TRUSTED_KEYS`` file), ``--pem`` as PEM, ``--private-env`` the private key as a
``DONEGATE_SIGNING_KEY`` value (for a secret store; never into a workdir).
"""

from __future__ import annotations

import click
from cryptography.hazmat.primitives import serialization

from donegate.cli._app import app
from donegate.harness.signing import ENV_PREFIX, SigningKey, signing_key


@app.group("key")
def key_group() -> None:
    """The signing key: make it, show its public half, export it for verifiers."""


def _show(key: SigningKey) -> None:
    click.echo(f"key_id       {key.public.key_id}")
    click.echo(f"fingerprint  SHA256:{key.public.fingerprint}")
    click.echo(f"public_key   {key.public.text}")
    click.echo(f"source       {key.source}")


@key_group.command("init")
def init_command() -> None:
    """Make the signing key when there is none (an old HMAC key file is kept aside), then show
    its public half."""
    _show(signing_key(create=True))


@key_group.command("show")
def show_command() -> None:
    """The key id, fingerprint and public key of the signing key."""
    _show(signing_key(create=False))


@key_group.command("export")
@click.option("--pem", is_flag=True, help="The public key as PEM.")
@click.option(
    "--private-env",
    is_flag=True,
    help="The PRIVATE key as a DONEGATE_SIGNING_KEY value (for a secret store).",
)
def export_command(*, pem: bool, private_env: bool) -> None:
    """The public key, one line (``ed25519:BASE64``), for ``verify --public-key``."""
    key = signing_key(create=False)
    if private_env:
        seed = key.private.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
        click.echo(ENV_PREFIX + seed.hex())
    elif pem:
        data = key.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        click.echo(data.decode(), nl=False)
    else:
        click.echo(f"{key.public.text} {key.public.key_id}")
