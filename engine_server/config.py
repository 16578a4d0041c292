"""The server configuration file: agent presets, NBoard levels, limits per kind of session,
and the engine, ZeroMQ and logging options that also exist as flags.

Read with the standard library's ``tomllib``; every table and key is checked against
``SCHEMA`` so that a misspelt key or a value of the wrong type stops the engine at start with
the file and line named, instead of being ignored.  Precedence: built-in defaults, then the
file, then command-line flags.  Found by ``--config PATH``, else ``$OTHELLO_ENGINE_CONFIG``,
else ``$XDG_CONFIG_HOME/othello-engine/config.toml`` (``~/.config/...``) when it exists.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from engine_server.agents import DEFAULT_AGENT, AgentSpecError, parse_spec
from engine_server.agents.policy import (
    BUILTIN_PRESETS,
    AgentPolicy,
    Catalog,
    check_presets,
    find_preset,
    parse_named,
)
from engine_server.agents.registry import AGENTS
from engine_server.search.timeman import DEFAULT_LAG_BUFFER

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file and line."""


def _positive(v: float) -> bool:
    return v > 0 and math.isfinite(v)


# table -> key -> (accepted types, check or None, what the check wants)
Check = tuple[tuple[type, ...], Callable[[Any], bool] | None, str]
_LIMITS_KEYS: dict[str, Check] = {
    "threads": ((int,), lambda v: v >= 1, "an integer >= 1"),
    "memory_mib": ((int, float), _positive, "a number of MiB > 0"),
    "move_time": ((int, float), _positive, "seconds > 0"),
    "agents": ((list,), lambda v: all(isinstance(x, str) for x in v), "a list of names"),
    "presets_only": ((bool,), None, "true or false"),
    "forbidden_params": ((list,), lambda v: all(isinstance(x, str) for x in v),
                         "a list of parameter names"),
}
SCHEMA: dict[str, dict[str, Check]] = {
    "engine": {
        "agent": ((str,), None, "a preset name or an agent spec"),
        "rules": ((str,), lambda v: v in ("standard", "reversed"), "standard or reversed"),
        "move_time": ((int, float), _positive, "seconds > 0"),
        "move_overhead": ((int, float), lambda v: 0 <= v <= 10, "seconds 0..10"),
        "ponder": ((bool,), None, "true or false"),
        "seed": ((int,), None, "an integer"),
        "name": ((str,), lambda v: v.isalnum(), "letters and digits only"),
        "protocol": ((str,), lambda v: v in ("auto", "nboard", "gtp"), "auto, nboard or gtp"),
        "warmup": ((bool,), None, "true or false"),
    },
    "log": {
        "level": ((str,), lambda v: v in LOG_LEVELS, " or ".join(LOG_LEVELS)),
        "file": ((str,), None, "a path"),
    },
    "zmq": {
        "endpoint": ((str,), None, "an endpoint such as tcp://127.0.0.1:5555"),
        "stdio": ((bool,), None, "true or false"),
        "max_sessions": ((int,), lambda v: v >= 1, "an integer >= 1"),
        "idle_timeout": ((int, float), _positive, "seconds > 0"),
        "new_session_timeout": ((int, float), _positive, "seconds > 0"),
        "disconnected_timeout": ((int, float), _positive, "seconds > 0"),
        "heartbeat": ((int, float), lambda v: 0 <= v <= 600, "seconds 0..600 (0: none)"),
        "max_message_bytes": ((int,), lambda v: v >= 1024, "an integer >= 1024"),
        "curve_key": ((str,), None, "a path"),
        "allowed_clients": ((str,), None, "a path"),
        "insecure": ((bool,), None, "true or false"),
    },
    "web": {
        "host": ((str,), lambda v: bool(v.strip()), "a host name or address"),
        "port": ((int,), lambda v: 0 <= v <= 65535, "a port 0..65535 (0: any free port)"),
        "max_sessions": ((int,), lambda v: v >= 1, "an integer >= 1"),
        "max_message_bytes": ((int,), lambda v: v >= 1024, "an integer >= 1024"),
        "resume_timeout": ((int, float), _positive, "seconds > 0"),
        "idle_timeout": ((int, float), _positive, "seconds > 0"),
    },
    "store": {
        "enabled": ((bool,), None, "true or false"),
        "path": ((str,), lambda v: bool(v.strip()),
                 "a file path, or a PostgreSQL address postgresql://USER@HOST:PORT/DATABASE"),
        "server_name": ((str,), lambda v: bool(v.strip()) and "/" not in v,
                        "a name without '/' (default: the host's name)"),
        "lease": ((int, float), lambda v: 1 <= v <= 3600, "seconds 1..3600"),
        "drain_timeout": ((int, float), lambda v: 0 <= v <= 3600, "seconds 0..3600"),
    },
    "limits": _LIMITS_KEYS,   # stdin sessions (the operator's): none unless set
    "remote": _LIMITS_KEYS,   # ZeroMQ (and web) sessions
}
FREE_TABLES = ("presets", "levels")   # their keys are names the operator chooses


@dataclass
class Limits:
    threads: int | None = None
    memory_mib: float | None = None
    move_time: float | None = None
    agents: list[str] = field(default_factory=list)
    presets_only: bool = False
    forbidden_params: list[str] = field(default_factory=list)

    def policy(self) -> AgentPolicy:
        return AgentPolicy(max_threads=self.threads, max_memory_mib=self.memory_mib,
                           max_move_time=self.move_time, agents=tuple(self.agents),
                           presets_only=self.presets_only,
                           forbidden_params=tuple(self.forbidden_params))


def _remote_defaults() -> Limits:
    # Safe on a 2-core machine with 8 GiB: 16 sessions x 256 MiB, one search thread each;
    # a weights, network or book file is a path on the server, so remote clients may not
    # choose one.
    return Limits(threads=1, memory_mib=256, move_time=10.0,
                  forbidden_params=["weights", "net", "book_file"])


@dataclass
class Config:
    engine: dict[str, Any] = field(default_factory=lambda: {
        "agent": DEFAULT_AGENT, "rules": "standard", "move_time": None,
        "move_overhead": DEFAULT_LAG_BUFFER, "ponder": False,
        "seed": 1, "name": "OthelloPy", "protocol": "auto", "warmup": True})
    log: dict[str, Any] = field(default_factory=lambda: {"level": "warning", "file": None})
    zmq: dict[str, Any] = field(default_factory=lambda: {
        "endpoint": None, "stdio": True, "max_sessions": 16, "idle_timeout": 1800.0,
        "new_session_timeout": 60.0, "disconnected_timeout": 300.0, "heartbeat": 10.0,
        "max_message_bytes": 65536, "curve_key": None, "allowed_clients": None, "insecure": False})
    # The web page (othello-web, othello-engine --web); its tabs get the [remote] limits.
    web: dict[str, Any] = field(default_factory=lambda: {
        "host": "127.0.0.1", "port": 8000, "max_sessions": 16, "max_message_bytes": 65536,
        "resume_timeout": 60.0, "idle_timeout": 1800.0})
    # The session store of the ZeroMQ and web servers (serve/store.py); path None: the
    # per-user default (store.default_store_path); server_name None: the host's name.
    store: dict[str, Any] = field(default_factory=lambda: {
        "enabled": True, "path": None, "lease": 15.0, "drain_timeout": 10.0,
        "server_name": None})
    presets: dict[str, str] = field(default_factory=lambda: dict(BUILTIN_PRESETS))
    levels: dict[int, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    remote: Limits = field(default_factory=_remote_defaults)
    source: Path | None = None

    def catalog(self) -> Catalog:
        return Catalog(presets=dict(self.presets), levels=dict(self.levels))

    def resolve(self, name_or_spec: str) -> str:
        """The spec for a preset name, letter case aside (or the spec itself), checked by the
        registry; an unknown name is an AgentSpecError listing the presets and families."""
        return parse_named(name_or_spec, self.presets)[0]

    def validate(self) -> None:
        """What no single key can check: presets, levels and the default agent together."""
        where = str(self.source) if self.source else "configuration"
        try:
            check_presets(self.presets)
        except AgentSpecError as e:
            raise ConfigError(f"{where}: [presets] {e}") from None
        for level, name in self.levels.items():
            if find_preset(name, self.presets) is None:
                raise ConfigError(f"{where}: [levels] {level} names {name!r}, which is not a "
                                  f"preset; presets: {', '.join(sorted(self.presets))}")
        try:
            self.resolve(self.engine["agent"])
        except AgentSpecError as e:
            raise ConfigError(f"{where}: [engine] agent: {e}") from None
        for kind, limits in (("limits", self.limits), ("remote", self.remote)):
            unknown = [a for a in limits.agents
                       if a.lower() not in AGENTS and find_preset(a, self.presets) is None]
            if unknown:
                raise ConfigError(f"{where}: [{kind}] agents names {unknown[0]!r}, neither an "
                                  f"agent family nor a preset")
            if kind == "remote" and not self.zmq["endpoint"]:
                # no remote sessions here: a local default agent may use what [remote]
                # forbids (its own weights=, more threads); othello-web checks at its start
                continue
            try:
                limits.policy().admit(self.engine["agent"], self.presets)
            except AgentSpecError as e:
                raise ConfigError(f"{where}: the default agent {self.engine['agent']!r} is "
                                  f"refused by [{kind}]: {e}") from None


def default_path() -> Path | None:
    env = os.environ.get("OTHELLO_ENGINE_CONFIG")
    if env is not None:
        return Path(env) if env else None  # set but empty: no file at all
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    path = base / "othello-engine" / "config.toml"
    return path if path.is_file() else None


def _line_of(text: str, table: str, key: str | None = None) -> int:
    """The line of ``[table]`` (or of ``key`` inside it); 0 when not found."""
    current = None
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        m = re.fullmatch(r"\[\s*([^\]]+?)\s*\]", line)
        if m:
            current = m.group(1).strip().strip('"')
            if key is None and current == table:
                return i
            continue
        if key is not None and current == table:
            k = line.partition("=")[0].strip().strip('"').strip("'")
            if k == key:
                return i
    return 0


def _err(path: Path | str, text: str, table: str, key: str | None, msg: str) -> ConfigError:
    line = _line_of(text, table, key)
    return ConfigError(f"{path}:{line}: {msg}" if line else f"{path}: {msg}")


def _check_value(v: Any, check: Check) -> bool:
    types, ok, _ = check
    if isinstance(v, bool) and bool not in types:
        return False  # TOML true is not a number
    return isinstance(v, types) and (ok is None or ok(v))


def loads(text: str, source: Path | str = "<config>") -> Config:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{source}: {e}") from None
    cfg = Config(source=Path(source))
    for table, values in data.items():
        if not isinstance(values, dict):
            raise _err(source, text, table, None,
                       f"{table!r} must be a table such as [{table}]")
        if table == "presets":
            for name, spec in values.items():
                if not isinstance(spec, str):
                    raise _err(source, text, table, name, f"preset {name!r} must be a spec "
                                                         "string")
                try:
                    parse_spec(spec)
                except AgentSpecError as e:
                    raise _err(source, text, table, name, f"preset {name!r}: {e}") from None
                cfg.presets[name] = spec
            continue
        if table == "levels":
            for level, name in values.items():
                if not level.isdigit() or not 1 <= int(level) <= 60 or not isinstance(name, str):
                    raise _err(source, text, table, level, "levels are `N = \"preset\"` with "
                                                           "N a depth from 1 to 60")
                cfg.levels[int(level)] = name
            continue
        schema = SCHEMA.get(table)
        if schema is None:
            known = ", ".join(f"[{t}]" for t in (*SCHEMA, *FREE_TABLES))
            raise _err(source, text, table, None, f"unknown table [{table}]; known: {known}")
        target: Any = getattr(cfg, table)
        for key, value in values.items():
            check = schema.get(key)
            if check is None:
                raise _err(source, text, table, key, f"unknown key {key!r} in [{table}]; "
                                                     f"known: {', '.join(schema)}")
            if not _check_value(value, check):
                raise _err(source, text, table, key,
                           f"[{table}] {key} = {value!r}: expected {check[2]}")
            if isinstance(value, int) and not isinstance(value, bool) and float in check[0]:
                value = float(value)
            if isinstance(target, dict):
                target[key] = value
            else:
                setattr(target, key, value)
    if "agent" in data.get("engine", {}):
        try:
            cfg.resolve(cfg.engine["agent"])
        except AgentSpecError as e:
            raise _err(source, text, "engine", "agent", f"[engine] agent: {e}") from None
    cfg.validate()
    return cfg


def load(path: str | Path | None) -> Config:
    """The file at ``path`` (None: the built-in defaults)."""
    if path is None:
        return Config()
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read configuration {p}: {e.strerror or e}") from None
    return loads(text, p)


_loaded: dict[Path | None, Config] = {}


def resolve_agent(name_or_spec: str, path: str | Path | None = None) -> str:
    """The spec for a preset name (built-in, or from the configuration file at ``path``, else
    the default location), or the spec itself; AgentSpecError when it is neither.  For tools
    that build agents without an engine process (referee, judge adapters)."""
    key = Path(path) if path is not None else default_path()
    cfg = _loaded.get(key)
    if cfg is None:
        cfg = _loaded[key] = load(key)
    return cfg.resolve(name_or_spec)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    s = str(v).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{s}"'


def dumps(cfg: Config) -> str:
    """The effective configuration as TOML that ``loads`` reads back to the same values
    (unset options are written as comments)."""
    out = [f"# effective configuration ({cfg.source or 'built-in defaults'} + flags)"]

    def table(name: str, values: dict[str, Any]) -> None:
        out.append("")
        out.append(f"[{name}]")
        for k, v in values.items():
            out.append(f"# {k} = (not set)" if v is None else f"{k} = {_toml_value(v)}")

    table("engine", cfg.engine)
    table("log", cfg.log)
    table("zmq", cfg.zmq)
    table("web", cfg.web)
    table("store", cfg.store)
    for name, lim in (("limits", cfg.limits), ("remote", cfg.remote)):
        table(name, dict(lim.__dict__))
    table("presets", {(k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else _toml_value(k)): v
                      for k, v in cfg.presets.items()})
    table("levels", {str(k): v for k, v in sorted(cfg.levels.items())})
    return "\n".join(out) + "\n"


__all__ = ["Config", "ConfigError", "Limits", "SCHEMA", "default_path", "dumps", "load",
           "loads", "resolve_agent"]
