"""The proxy's serve.yaml keys: trusted roles, exposed reasons, the stream hold-back."""

from __future__ import annotations

from pathlib import Path

import pytest

from shieldbench.errors import ConfigError
from shieldbench.service import ServeConfig, build_defenses, load_config


def test_proxy_keys_are_read_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "serve.yaml"
    path.write_text("trusted_roles: [system, developer]\nexpose_reasons: true\n")
    cfg = load_config(path)
    assert (cfg.trusted_roles, cfg.expose_reasons) == (("system", "developer"), True)
    assert ServeConfig().trusted_roles == ()  # every role screened by default
    assert ServeConfig().expose_reasons is False
    path.write_text("roles: [user, tool]\n")
    with pytest.raises(ConfigError, match="replaced by 'trusted_roles'"):
        load_config(path)
    with pytest.raises(ConfigError, match="unknown role"):
        ServeConfig(trusted_roles=("User",))
    with pytest.raises(ConfigError, match="expose_reasons"):
        ServeConfig(expose_reasons="no")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="stream_holdback_chars"):
        ServeConfig(stream_holdback_chars=0)


def test_a_holdback_shorter_than_the_output_defense_is_refused() -> None:
    cfg = ServeConfig(defense="pattern", output_defense="secrets", stream_holdback_chars=100)
    with pytest.raises(ConfigError, match="256"):
        build_defenses(cfg)
    assert build_defenses(ServeConfig(defense="pattern", output_defense="secrets")).output
