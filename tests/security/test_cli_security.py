"""The CLI against the secured cluster: --username with the password from the environment (or --password, or a
client properties file), one clear line when credentials are missing or wrong, never the password."""

from __future__ import annotations

import os
import subprocess
import sys


def _fluss(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fluss.cli", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def test_cli_commands_take_a_username_and_the_password_from_the_environment(secured_cluster):
    sasl = secured_cluster.sasl_bootstrap_servers
    ca = str(secured_cluster.tls_ca_path)
    ok = _fluss("database", "create", "cli_sec", "--if-not-exists", "-b", sasl, "-u", "admin", "--tls-truststore", ca,
                env={"FLUSS_PASSWORD": "admin-secret"})
    assert ok.returncode == 0, ok.stderr
    listed = _fluss("database", "list", "-b", sasl, "-u", "admin", "--password", "admin-secret",
                    "--tls-truststore", ca)
    assert listed.returncode == 0 and "cli_sec" in listed.stdout, listed.stderr


def test_a_client_properties_file_works_in_both_forms(secured_cluster, tmp_path):
    props = tmp_path / "client.properties"
    props.write_text(f"# a secured cluster\nbootstrap.servers={secured_cluster.sasl_bootstrap_servers}\n"
                     "client.security.protocol=SASL\nclient.security.sasl.username=bob\n"
                     "client.security.sasl.password=bob-secret\nclient.security.ssl.enabled=true\n"
                     f"client.security.ssl.truststore.path={secured_cluster.tls_ca_path}\n")
    yml = tmp_path / "client.yaml"
    yml.write_text(f"bootstrap.servers: '{secured_cluster.sasl_bootstrap_servers}'\nclient.security.protocol: SASL\n"
                   "client.security.sasl.username: bob\nclient.security.sasl.password: bob-secret\n"
                   f"client.security.ssl.enabled: true\nclient.security.ssl.truststore.path: '{secured_cluster.tls_ca_path}'\n")
    for path in (props, yml):
        result = _fluss("database", "list", "--client-config", str(path))
        assert result.returncode == 0, result.stderr


def test_missing_or_wrong_credentials_give_one_clear_line_without_the_password(secured_cluster):
    sasl = secured_cluster.sasl_bootstrap_servers
    tls = ("--tls-truststore", str(secured_cluster.tls_ca_path))
    plaintext = _fluss("database", "list", "-b", sasl)
    assert plaintext.returncode != 0 and "a TLS listener?" in plaintext.stderr, plaintext.stderr
    none = _fluss("database", "list", "-b", sasl, *tls)
    assert none.returncode != 0 and "requires SASL authentication" in none.stderr, none.stderr
    wrong = _fluss("database", "list", "-b", sasl, "-u", "alice", *tls, env={"FLUSS_PASSWORD": "bad-guess-123"})
    assert wrong.returncode != 0 and "invalid username or password" in wrong.stderr, wrong.stderr
    assert "bad-guess-123" not in wrong.stderr + wrong.stdout
    no_password = _fluss("database", "list", "-b", sasl, "-u", "alice", *tls, env={"FLUSS_PASSWORD": ""})
    assert no_password.returncode != 0
